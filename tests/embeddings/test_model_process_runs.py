"""Runs whose embedding process died or cannot start (real Runner, PostgreSQL, child process)."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import pytest
from agents.memory import SQLiteSession

from mem01session import Mem01Session, Memory, Settings
from mem01session.embeddings import MiniLMEmbedder
from tests.child_env import ended, not_python
from tests.reliability.harness import say

pytestmark = pytest.mark.slow  # starts processes (see tests/spawns.py)


async def test_a_run_after_the_embedding_process_was_killed_still_gets_memory(
    db_url: str, tmp_path: Path
) -> None:
    embedder = MiniLMEmbedder(batch_size=31)  # a process of this test's own
    settings = Settings(database_url=db_url, home=tmp_path)
    async with Memory(settings, embedder=embedder) as memory:
        store = tmp_path / "t.sqlite"
        monday = Mem01Session("mon", "kai", inner=SQLiteSession("mon", store), memory=memory)
        await say(monday, "I adopted a beagle named Max last spring.")
        assert await monday.flush_memory(timeout=60)
        assert embedder._process is not None
        pid = embedder._process.pid
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        assert ended(pid)

        friday = Mem01Session(
            "fri", "kai", inner=SQLiteSession("fri", store), memory=memory, recall_wait=60
        )
        seen = await say(friday, "Do I have a dog?")
    assert "beagle named Max" in str(seen.calls[0].input)  # a new process answered
    assert friday.last_memory_error is None
    assert embedder._process.pid not in (None, pid)


async def test_a_run_whose_embedding_process_cannot_start_answers_without_memory(
    db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    embedder = MiniLMEmbedder(batch_size=29)  # never started: its first start fails
    settings = Settings(database_url=db_url, home=tmp_path)
    monkeypatch.setattr(sys, "executable", not_python(tmp_path))
    async with Memory(settings, embedder=embedder) as memory:
        session = Mem01Session(
            "s", "lea", inner=SQLiteSession("s", tmp_path / "t.sqlite"), memory=memory
        )
        seen = await say(session, "Where do I live?", answer="I don't know yet.")
        error = session.last_memory_error
        await memory.aclose()
    assert "<memory" not in str(seen.calls[0].input)  # answered, without a block
    assert error is not None and "embedding process" in error
    assert "MEM01_EMBEDDING_PROCESS=0" in error
