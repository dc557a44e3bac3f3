"""No way a process stops leaves memory switched off for the others.

* A process that exits normally hands back the jobs its worker had claimed, so another
  process takes them at once instead of after the lease (120 s).
* After a process was killed with SIGKILL, the next process to exit normally still stops
  the embedded server: nothing is left running.
* A process whose embedded server stopped under it starts it again.
* An embedded server that is alive but does not answer fails the opening within the
  connection timeout: the run answers without memory instead of waiting for it; one that
  stops answering while in use holds a run, a flush and a close no longer than their
  bounds (not the driver's clean-up after each statement cut short).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from agents.memory import SQLiteSession
from sqlalchemy import text

from mem01session import Mem01Session, Memory, Settings
from mem01session.db import Database, urls
from mem01session.db.embedded import embedded_url
from mem01session.embeddings import HashingEmbedder
from mem01session.engine import BeliefEngine
from mem01session.extraction import RuleExtractor
from mem01session.queue import JobStore, MemoryWorker, TurnMessage
from mem01session.session import session_health
from tests.child_env import pythonpath
from tests.reliability.harness import ROOT, say

pytestmark = pytest.mark.slow  # each test runs processes and servers of its own

SLOW_CHILD = textwrap.dedent(
    """
    import asyncio, os, sys
    from agents.memory import SQLiteSession
    from mem01session import Memory, Mem01Session
    from mem01session.engine import BeliefEngine
    from mem01session.db import Database
    from mem01session.embeddings import HashingEmbedder
    from mem01session.extraction import RuleExtractor
    from tests.reliability.harness import say

    class Slow(RuleExtractor):
        async def extract(self, turn, candidates, now):
            await asyncio.sleep(0.3)  # an LLM call
            return await super().extract(turn, candidates, now)

    async def main(url, transcripts):
        emb = HashingEmbedder(64)
        db = await Database.open(url, embedding_model=emb.name, embedding_dim=64)
        memory = Memory(engine=BeliefEngine(db, emb), extractor=Slow())
        session = Mem01Session("a", "ulla", inner=SQLiteSession("a", transcripts), memory=memory)
        for n in range(3):
            await say(session, f"I like sport number {n}.")
        print(f"worker {(await memory.worker()).worker_id}", flush=True)
        await memory.aclose(flush_timeout=0.2)  # a clean exit, work still queued
        await db.close()

    asyncio.run(main(sys.argv[1], sys.argv[2]))
    """
)


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("MEM01_DATABASE_URL", "DATABASE_URL")}
    env["PYTHONPATH"] = pythonpath(ROOT)
    return env


async def test_a_clean_exit_leaves_no_job_claimed(
    db_url: str, db: Database, embedder: HashingEmbedder, tmp_path: Path
) -> None:
    store = JobStore(db)
    engine = BeliefEngine(db, embedder)
    # Another process's backlog for the same user: the child's worker will be busy with it.
    for n in range(40):
        message = [TurnMessage("user", f"I like hobby number {n}.")]
        await store.enqueue("ulla", "b", message, now=engine.clock())

    child = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        SLOW_CHILD,
        db_url,
        str(tmp_path / "a.sqlite"),
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    out, err = await child.communicate()
    assert child.returncode == 0, err.decode()[-3000:]
    worker_id = out.decode().split("worker ")[1].split()[0]

    async with db.sa_engine.connect() as conn:  # right after the child exited
        held = (
            await conn.execute(
                text(
                    "SELECT count(*) FROM memory_jobs WHERE status = 'running' OR lease_owner = :w"
                ),
                {"w": worker_id},
            )
        ).scalar_one()
    assert held == 0

    # Whatever the child left is taken at once here, and applied exactly once.
    worker = MemoryWorker(engine, RuleExtractor())
    while await worker.run_once():
        pass
    jobs = await store.list_jobs(user_id="ulla", limit=100)
    assert len(jobs) == 43 and {j.status for j in jobs} == {"done"}
    likes = [b.content for b in await engine.history("ulla", limit=100) if b.status == "active"]
    assert len(likes) == len(set(likes)) == 43


# -- the embedded server -----------------------------------------------------------------

EMBEDDED_CHILD = textwrap.dedent(
    """
    import asyncio, sys, time
    from mem01session import Memory

    async def main(mode):
        async with Memory() as memory:
            await memory.engine()
            print("ready", flush=True)
            if mode == "hang":
                await asyncio.Event().wait()

    asyncio.run(main(sys.argv[1]))
    """
)


@pytest.fixture
def home() -> Iterator[Path]:
    folder = Path(tempfile.mkdtemp(prefix="mem01-life-"))
    yield folder
    _stop_server(folder / "pg")
    shutil.rmtree(folder, ignore_errors=True)


def _server_process(pgdata: Path) -> psutil.Process | None:
    try:
        pid = int((pgdata / "postmaster.pid").read_text().splitlines()[0])
        process = psutil.Process(pid)
    except (FileNotFoundError, IndexError, ValueError, psutil.NoSuchProcess):
        return None
    return process if process.is_running() else None


def _stop_server(pgdata: Path) -> None:
    process = _server_process(pgdata)
    if process is not None:
        process.send_signal(signal.SIGINT)  # fast shutdown
        process.wait(30)


def _run_child(home: Path, mode: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", EMBEDDED_CHILD, mode],
        env={**_env(), "MEM01_HOME": str(home)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_after_a_sigkill_the_next_clean_exit_stops_the_server(home: Path) -> None:
    killed = _run_child(home, "hang")
    assert killed.stdout is not None
    assert killed.stdout.readline().strip() == "ready", killed.stderr
    assert _server_process(home / "pg") is not None
    killed.send_signal(signal.SIGKILL)
    killed.wait(30)
    killed.stdout.close()
    assert killed.stderr is not None
    killed.stderr.close()
    handles = json.loads((home / "pg" / ".handle_pids.json").read_text())
    assert killed.pid in handles  # the killed process never took its pid out

    clean = _run_child(home, "exit")
    out, err = clean.communicate(timeout=120)
    assert clean.returncode == 0 and out.strip() == "ready", err

    assert _server_process(home / "pg") is None  # no orphan server
    assert json.loads((home / "pg" / ".handle_pids.json").read_text()) == []


async def test_a_process_restarts_its_embedded_server_when_it_stopped(
    home: Path, caplog: pytest.LogCaptureFixture
) -> None:
    emb = HashingEmbedder(64)
    memory = Memory(Settings(home=home), embedder=emb, extractor=RuleExtractor())
    session = Mem01Session("c", "remy", inner=SQLiteSession("c", home / "t.sqlite"), memory=memory)
    await say(session, "I live in Lyon.")
    assert await session.flush_memory(timeout=30)

    server = _server_process(home / "pg")
    assert server is not None
    server.send_signal(signal.SIGKILL)  # the server dies under a running process
    server.wait(30)

    await say(session, "I like cheese.")
    assert await session.flush_memory(timeout=60)
    assert _server_process(home / "pg") is not None
    assert "restarted" in caplog.text
    result = await session.recall("what do I like and where do I live?")
    assert result is not None and "Likes cheese" in result.text and "Lyon" in result.text
    assert session.last_memory_error is None
    await session.aclose()
    await memory.aclose()


async def test_an_embedded_server_that_does_not_answer_fails_the_opening_within_the_timeout(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server stopped by a signal (or stuck on its disk) takes connections and never
    answers; before, a process's first run waited for it without end."""
    embedded_url(home)  # started, as by another process
    server = _server_process(home / "pg")
    assert server is not None
    monkeypatch.setattr(urls, "CONNECT_TIMEOUT_SECONDS", 1)
    memory = Memory(Settings(home=home), embedder=HashingEmbedder(64), extractor=RuleExtractor())
    session = Mem01Session("c", "remy", inner=SQLiteSession("c", home / "t.sqlite"), memory=memory)
    server.send_signal(signal.SIGSTOP)
    try:
        await asyncio.wait_for(say(session, "I live in Lyon."), 60)  # 60: a hang, not a bound
        error = session.last_memory_error
        assert error is not None and "could not connect to the embedded PostgreSQL" in error
        assert "timeout" in error
        assert session_health(session).unsent_turns == 1  # kept for when the server answers again
    finally:
        server.send_signal(signal.SIGCONT)
    await memory.aclose()


def _freeze(pgdata: Path) -> list[psutil.Process]:
    """Every process of the server stopped by SIGSTOP (the postmaster and each backend):
    connections stay open and nothing answers on them."""
    server = _server_process(pgdata)
    assert server is not None
    processes = [server, *server.children(recursive=True)]
    for process in processes:
        process.send_signal(signal.SIGSTOP)
    return processes


async def test_a_server_that_stops_answering_mid_use_holds_nothing_past_its_bounds(
    home: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Cut short, psycopg cancels a statement on the server, waiting up to 5 s for that and
    5 s more for the statement to end: before, each cut statement held its caller that long
    past its bound (a run with a 2 s budget took 24 s). The test gives up at 60 s."""
    memory = Memory(Settings(home=home), embedder=HashingEmbedder(64), extractor=RuleExtractor())
    session = Mem01Session("c", "remy", inner=SQLiteSession("c", home / "t.sqlite"),
                           memory=memory, recall_wait=0.5)  # fmt: skip
    await say(session, "I live in Lyon.")
    assert await session.flush_memory(timeout=30)
    frozen = _freeze(home / "pg")
    try:
        with caplog.at_level(logging.INFO, logger="psycopg"):
            await asyncio.wait_for(say(session, "I like cheese."), 60)
            error = session.last_memory_error
            assert error is not None and error.startswith("recall gave up after 0.5 s")
            assert "enqueue gave up after 0.5 s" in error
            assert await asyncio.wait_for(session.flush_memory(timeout=0.5), 60) is False
            assert "flush gave up after 0.5 s" in (session.last_memory_error or "")
            await asyncio.wait_for(session.aclose(flush_timeout=0.5), 60)
            await asyncio.wait_for(memory.aclose(flush_timeout=0.5), 60)
        # psycopg's own waits for the server never ran out: they were cut short instead
        assert "closing connection" in caplog.text
        assert "cancellation timeout expired" not in caplog.text
        assert "query not terminated after cancellation" not in caplog.text
    finally:
        for process in frozen:
            process.send_signal(signal.SIGCONT)
