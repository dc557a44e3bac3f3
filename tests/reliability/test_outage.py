"""PostgreSQL outage: the server is stopped mid-conversation and started again.

A private embedded server (scratch folder under /tmp) is stopped with ``pg_ctl`` while a
conversation goes on. Fail-open: every run is answered, ``last_memory_error`` says what
failed, nothing escapes; the turns said during the outage are kept by the session and,
after the restart, enqueued and applied: no accepted turn is lost. A job whose apply
failed because the server vanished mid-job is not left ``running`` until its lease ends.
``strict=True``: the failure surfaces as ``Mem01MemoryError`` and the transcript holds the
completed runs, no memory block, and nothing twice.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections.abc import AsyncIterator, Iterator, Sequence
from datetime import datetime
from pathlib import Path

import pytest
from agents.memory import SQLiteSession

from mem01session import Memory
from mem01session.db import Database, migrate
from mem01session.db import database as database_module
from mem01session.embeddings import HashingEmbedder
from mem01session.engine import BeliefEngine
from mem01session.engine.render import OPEN
from mem01session.errors import Mem01MemoryError
from mem01session.extraction import Candidate, Extraction, RuleExtractor, Turn, TurnMessage
from mem01session.queue import JobStore, MemoryWorker
from mem01session.queue.worker import WorkerPolicy
from mem01session.session import Mem01Session, session_health
from tests.conftest import TEST_DIM
from tests.reliability.harness import ScratchServer, check_invariants, fact_line, say
from tests.session.conftest import Gate

pytestmark = pytest.mark.slow  # starts processes (see tests/spawns.py)


@pytest.fixture(scope="module")
def server() -> Iterator[ScratchServer]:
    srv = ScratchServer()
    migrate.upgrade(srv.url, embedding_dim=TEST_DIM, embedding_model=HashingEmbedder(TEST_DIM).name)
    yield srv
    srv.close()


@pytest.fixture
async def outage_engine(server: ScratchServer) -> AsyncIterator[BeliefEngine]:
    emb = HashingEmbedder(TEST_DIM)
    db = await Database.open(url=server.url, embedding_model=emb.name, embedding_dim=emb.dim)
    yield BeliefEngine(db, emb)
    await db.close()


class GatedExtractor:
    """The rule extractor, but a turn mentioning ``hold`` waits for ``gate``."""

    name = "gated-rules"

    def __init__(self, hold: str) -> None:
        self.inner = RuleExtractor()
        self.hold = hold
        self.started = Gate()
        self.gate = Gate()

    async def extract(
        self, turn: Turn, candidates: Sequence[Candidate], now: datetime
    ) -> Extraction:
        if any(self.hold in m.text for m in turn.messages if m.role == "user"):
            self.started.set()
            await self.gate.wait()
        return await self.inner.extract(turn, candidates, now)


async def active(engine: BeliefEngine, user: str) -> set[str]:
    return {b.content for b in await engine.history(user) if b.status == "active"}


async def test_fail_open_through_an_outage_and_catch_up(
    server: ScratchServer,
    outage_engine: BeliefEngine,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="mem01session")
    user = "olga"
    held = fact_line(5)
    extractor = GatedExtractor(hold=held[0])
    memory = Memory(
        engine=outage_engine,
        extractor=extractor,
        worker_policy=WorkerPolicy(poll_interval=0.05),
    )
    worker = await memory.worker()
    session = Mem01Session(
        "conv",
        user,
        inner=SQLiteSession("conv", tmp_path / "t.sqlite"),
        memory=memory,
        recall_wait=0.2,
    )
    await say(session, fact_line(0)[0])
    assert await session.flush_memory(timeout=30)
    assert session.last_memory_error is None

    # The server vanishes while a job is inside the extractor: its apply will fail.
    await say(session, held[0])
    await asyncio.wait_for(extractor.started.wait(), 30)
    server.stop()
    extractor.gate.set()
    during = [fact_line(n) for n in (1, 2, 3)]
    for line, _ in during:
        result = await say(session, line, answer=f"ok: {line}")
        assert result.calls, "the model was called: the run was answered"
        assert session.last_memory_error is not None
    assert "failed" in session.last_memory_error
    assert session_health(session).unsent_turns > 0  # kept, not dropped
    assert session_health(session).dropped_turns == 0

    assert not await session.flush_memory(timeout=1)  # down: False, not an exception
    server.start()
    assert await session.flush_memory(timeout=60), "the worker did not catch up"
    assert session.last_memory_error is None  # memory works again, and says so
    assert session_health(session).unsent_turns == 0
    expected = {fact_line(n)[1] for n in (0, 1, 2, 3, 5)}
    # Cities supersede each other; only the last city said is active, the rest is history.
    history = {b.content for b in await outage_engine.history(user)}
    assert expected <= history, expected - history
    assert held[1] in await active(outage_engine, user)
    await check_invariants(outage_engine.db.sa_engine, user)
    assert worker.processed >= 5
    items = await session.get_items()
    users = [i["content"] for i in items if i.get("role") == "user"]
    assert users == [fact_line(n)[0] for n in (0, 5, 1, 2, 3)]
    assert not any(OPEN in str(i) for i in items)
    await session.aclose()
    await memory.aclose()
    # Failures were logged without statements or their parameters: no user text.
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "failed" in logged
    for n in (0, 1, 2, 3, 5):
        assert fact_line(n)[0] not in logged


async def test_strict_session_surfaces_the_outage(
    server: ScratchServer, outage_engine: BeliefEngine, tmp_path: Path
) -> None:
    memory = Memory(engine=outage_engine, extractor=RuleExtractor())
    session = Mem01Session(
        "strict-conv",
        "sven",
        inner=SQLiteSession("strict-conv", tmp_path / "t.sqlite"),
        memory=memory,
        strict=True,
    )
    await say(session, "I live in Bergen.", answer="first answer")
    assert await session.flush_memory(timeout=30)
    server.stop()
    try:
        with pytest.raises(Mem01MemoryError) as info:
            await say(session, "I live in Tromso.", answer="second answer")
        assert "failed" in str(info.value)
        with pytest.raises(Mem01MemoryError):
            await session.flush_memory(timeout=1)
    finally:
        server.start()
    items = await session.get_items()
    texts = [str(i.get("content")) for i in items]
    assert texts[0] == "I live in Bergen." and "first answer" in texts[1]
    assert not any(OPEN in t for t in texts)
    assert "second answer" not in " ".join(texts)  # the failed run produced no answer
    assert texts.count("I live in Tromso.") <= 1
    assert (
        session_health(session).unsent_turns == 0
    )  # strict keeps nothing behind the caller's back
    assert await session.flush_memory(timeout=30)
    await session.aclose()
    await memory.aclose()


async def test_a_server_that_cannot_be_restarted_does_not_hold_the_runs(
    server: ScratchServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The embedded server stops and its restart hangs (pg_ctl waiting on a server that
    will not come up): each run answers without memory within its budget, says why, and
    only one restart is attempted; the turns said meanwhile are kept and applied after."""
    restarts: list[Path] = []
    release = threading.Event()

    def hung_restart(home: Path) -> bool:
        restarts.append(home)
        release.wait(120)  # until the test lets it go
        return False

    monkeypatch.setattr(database_module, "restart_if_stopped", hung_restart)
    emb = HashingEmbedder(TEST_DIM)
    db = Database(server.url, embedded=True, home=tmp_path)  # as if this process started it
    memory = Memory(engine=BeliefEngine(db, emb), extractor=RuleExtractor())
    session = Mem01Session(
        "conv", "ines", inner=SQLiteSession("conv", tmp_path / "t.sqlite"), memory=memory,
        recall_wait=0.3,
    )  # fmt: skip
    try:
        await say(session, "I live in Faro.")
        assert await session.flush_memory(timeout=30)
        server.stop()
        async with asyncio.timeout(60):  # a deadlock guard, not a timing assertion
            for text in ("Where do I live?", "I live in Evora."):
                model = await say(session, text, answer="ok")
                assert model.calls, "the run was answered"
                assert OPEN not in json.dumps(model.calls[0].input)  # without memory
                error = session.last_memory_error or ""  # the recall's, then the enqueue's
                assert "answered without memory" in error and "being restarted" in error, error
        assert len(restarts) == 1  # one restart for every run that met the stopped server
        assert session_health(session).unsent_turns >= 1  # said during the outage: kept
    finally:
        release.set()
        server.start()
    assert await session.flush_memory(timeout=60), session.last_memory_error
    history = {
        b.content for b in await session.memory.beliefs(session.user_id, include_inactive=True)
    }
    assert {"Lives in Faro", "Lives in Evora"} <= history
    await session.aclose()
    await memory.aclose()
    await db.close()


async def test_an_attempt_the_outage_cut_short_is_not_counted(
    server: ScratchServer, outage_engine: BeliefEngine
) -> None:
    """The server stops while a job is in the extractor, so writing it fails: with one
    attempt allowed, the job used to be parked as ``failed``. The outage is not the turn's
    fault: once the server is back the job is taken up again and applied, one attempt."""
    user = "pia"
    line, belief = fact_line(7)
    extractor = GatedExtractor(hold=line)
    store = JobStore(outage_engine.db)
    job_id = await store.enqueue(
        user, "conv", [TurnMessage("user", line)], now=outage_engine.clock()
    )
    policy = WorkerPolicy(max_attempts=1, poll_interval=0.05)
    worker = MemoryWorker(outage_engine, extractor, policy=policy)
    worker.start()
    try:
        await asyncio.wait_for(extractor.started.wait(), 30)
        server.stop()
        extractor.gate.set()  # its write meets the stopped server
        await worker.wait_progress(60)  # the attempt ended
        server.start()
        assert await worker.wait_until_done(user, {job_id}, timeout=60)
    finally:
        await worker.stop()
    job = await store.get(job_id)
    assert job is not None
    assert (job.status, job.attempts) == ("done", 1), (job.status, job.attempts, job.last_error)
    assert belief in await active(outage_engine, user)


async def test_turns_held_through_an_outage_are_handed_over_when_it_ends_during_close(
    server: ScratchServer,
    outage_engine: BeliefEngine,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The database came back a moment into ``aclose``: the held turns were dropped at the
    first failed attempt ("could not be enqueued before close and are lost")."""
    from mem01session.session import durable_tier

    memory = Memory(engine=outage_engine, worker_policy=WorkerPolicy(poll_interval=0.05))
    session = Mem01Session(
        "conv-close", "oleg", inner=SQLiteSession("c", tmp_path / "t.sqlite"), memory=memory,
        recall_wait=0.2,
    )  # fmt: skip
    await say(session, fact_line(0)[0])
    assert await session.flush_memory(timeout=30)
    server.stop()
    line, fact = fact_line(1)
    await say(session, line, answer=f"ok: {line}")
    assert session_health(session).unsent_turns > 0
    pauses = 0

    async def outage_ends() -> None:  # the database is back after the first failed attempt
        nonlocal pauses
        pauses += 1
        if pauses == 1:
            await asyncio.to_thread(server.start)

    monkeypatch.setattr(durable_tier, "retry_pause", outage_ends)
    await session.aclose(flush_timeout=30)
    assert pauses >= 1
    assert session_health(session).dropped_turns == 0
    assert fact in await active(outage_engine, "oleg")
    await memory.aclose()
