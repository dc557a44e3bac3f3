"""Extraction in a process of its own: ``Memory(run_worker=False)`` records turns, and
``mem01session worker`` (a real second process) applies them, woken by each turn."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from agents.memory import SQLiteSession

from mem01session import Mem01Session, Memory
from mem01session.db import Database
from mem01session.embeddings import HashingEmbedder
from mem01session.engine import BeliefEngine
from mem01session.extraction import RuleExtractor
from mem01session.session.durable_tier import DurableTier
from tests.child_env import pythonpath
from tests.conftest import TEST_DIM
from tests.reliability.harness import ROOT, say

pytestmark = pytest.mark.slow  # a second process


def _worker_env(db_url: str, home: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("OPENAI_API_KEY", "DATABASE_URL", "MEM01_DATABASE_URL")
    }
    env.update(
        MEM01_DATABASE_URL=db_url,
        MEM01_HOME=str(home),
        MEM01_EMBEDDING_MODEL=HashingEmbedder(TEST_DIM).name,
        PYTHONPATH=pythonpath(ROOT),
    )
    return env


async def test_turns_recorded_without_a_worker_are_applied_by_the_worker_command(
    db_url: str, db: Database, embedder: HashingEmbedder, tmp_path: Path
) -> None:
    memory = Memory(engine=BeliefEngine(db, embedder), extractor=RuleExtractor(), run_worker=False)
    inner = SQLiteSession("chat", tmp_path / "t.sqlite")
    session = Mem01Session("chat", "wanda", inner=inner, memory=memory)
    await say(session, "I live in Lisbon.")
    # Nobody extracts yet: the turn stays queued, and the flush says where to look.
    assert not await session.flush_memory(timeout=0.3)
    assert "mem01session worker" in (session.last_memory_error or "")
    worker = subprocess.Popen(
        # An hour between polls: the turns below are found because they are announced.
        [sys.executable, "-m", "mem01session", "worker", "--poll-interval", "3600"],
        env=_worker_env(db_url, tmp_path / "home"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert worker.stdout is not None
        started = worker.stdout.readline()
        assert started.startswith("worker ") and "rules-v1" in started, started
        await say(session, "I moved to Porto.")
        assert await session.flush_memory(timeout=60), session.last_memory_error
        await say(session, "I have a dog named Rex.")
        assert await session.flush_memory(timeout=60), session.last_memory_error
        result = await session.recall("Where do I live, and do I have pets?")
        assert "Porto" in result.text and "Rex" in result.text and not result.stale
        # This process extracted nothing: its worker never started.
        assert not (await memory.worker()).running and (await memory.worker()).processed == 0
    finally:
        worker.send_signal(signal.SIGTERM)
        out, err = worker.communicate(timeout=60)
    assert worker.returncode == 0, err
    assert "stopped: 3 turn(s) processed, 0 handed back" in out
    await memory.aclose()


async def test_closing_without_a_worker_enqueues_and_does_not_wait(
    db: Database, embedder: HashingEmbedder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory = Memory(engine=BeliefEngine(db, embedder), extractor=RuleExtractor(), run_worker=False)
    inner = SQLiteSession("chat", tmp_path / "t.sqlite")
    session = Mem01Session("chat", "xena", inner=inner, memory=memory)
    await say(session, "I live in Oslo.")

    async def no_wait(*_args: object, **_kwargs: object) -> bool:
        raise AssertionError("closing waited for extraction")

    monkeypatch.setattr(DurableTier, "_barrier", no_wait)
    await session.aclose(flush_timeout=30)
    await memory.aclose(flush_timeout=30)
    assert session.last_memory_error is None
    rows = await db.direct.fetch("SELECT status FROM memory_jobs WHERE user_id = 'xena'", {})
    assert [r["status"] for r in rows] == ["pending"]  # queued for the worker elsewhere


def test_the_worker_commands_warnings_are_dated_log_lines() -> None:
    """Python's fallback printed the bare message: no time, no source."""
    script = (
        "from mem01session.cli.worker import _dated_logs\n"
        "from mem01session.logs import get_logger\n"
        "_dated_logs()\n"
        "get_logger('mem01session.queue.worker').warning('job 7 failed (TimeoutError)')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    [line] = done.stderr.splitlines()
    assert line.endswith(" WARNING mem01session.queue.worker: job 7 failed (TimeoutError)")
    assert line[:19].replace("-", "").replace(":", "").replace(" ", "").isdigit()  # its time
