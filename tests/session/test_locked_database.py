"""A lock held elsewhere (a migration running in another process, ``VACUUM FULL``, an
administrator's open transaction) holds the application no longer than its bounds: a run
answers without memory, a flush and a close return within their timeouts, a worker stops,
an opening fails and says why. Each test would hang without its bound; ``bounded`` turns
such a hang into a failure."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

import pytest
from agents.memory import SQLiteSession

import mem01session.db.database as database_module
import mem01session.memory.verbs as verbs_module
import mem01session.queue.worker as worker_module
from mem01session import Mem01Session, Memory, Settings
from mem01session.db import Database
from mem01session.embeddings import HashingEmbedder
from mem01session.errors import DatabaseError, Mem01MemoryError
from mem01session.session import session_health
from tests.memory.test_memory import ask
from tests.pg import locked

T = TypeVar("T")
HANG = 60.0  # far beyond every bound below: reaching it means something waited on the lock


async def bounded(step: Awaitable[T]) -> T:
    return await asyncio.wait_for(step, HANG)


async def test_a_flush_returns_within_its_timeout_while_the_job_table_is_locked(
    make_session: Callable[..., Mem01Session], db_url: str
) -> None:
    session = make_session("c1")
    await ask(session, "I live in Oslo.")
    with locked(db_url, "memory_jobs"):
        assert await bounded(session.flush_memory(timeout=0.5)) is False
    error = session.last_memory_error
    assert error is not None and error.startswith("flush gave up after 0.5 s while ")
    assert await session.flush_memory() is True  # the lock gone, nothing was lost
    assert session.last_memory_error is None


async def test_closing_a_session_returns_within_its_timeout_while_the_job_table_is_locked(
    make_session: Callable[..., Mem01Session],
    db_url: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    session = make_session("c1", recall_wait=0.5)
    with locked(db_url, "memory_jobs"):
        await bounded(ask(session, "I live in Oslo."))
        assert session.last_memory_error is not None  # recall and enqueue gave up
        assert session_health(session).unsent_turns == 1  # the turn waits with the session
        with caplog.at_level(logging.WARNING, logger="mem01session"):
            await bounded(session.aclose(flush_timeout=0.5))
    assert session_health(session).dropped_turns == 1
    assert "1 turn(s) could not be enqueued before close" in caplog.text
    error = session.last_memory_error
    assert error is not None and "flush at close gave up after 0.5 s while storing turns" in error
    items = await session._inner.get_items()  # the transcript kept the turn
    assert items[0].get("content") == "I live in Oslo."


async def test_a_worker_stops_without_handing_back_its_claims_while_the_job_table_is_locked(
    db_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setattr(worker_module, "RELEASE_TIMEOUT_SECONDS", 0.2)
    memory = Memory(Settings(database_url=db_url, home=tmp_path), embedder=HashingEmbedder(24))
    worker = await memory.worker()
    assert worker.running
    with locked(db_url, "memory_jobs"), caplog.at_level(logging.WARNING, logger="mem01session"):
        await bounded(memory.aclose())
    assert memory.closed and not worker.running
    assert "could not release claimed jobs at stop: no answer within 0.2 s" in caplog.text


async def test_an_opening_fails_and_says_why_while_the_schema_is_locked(
    db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As while a migration runs elsewhere: opening reads the schema's revision, and that
    read waits for no lock longer than SCHEMA_READ_TIMEOUT_SECONDS."""
    monkeypatch.setattr(database_module, "SCHEMA_READ_TIMEOUT_SECONDS", 0.3)
    memory = Memory(Settings(database_url=db_url, home=tmp_path), embedder=HashingEmbedder(24))
    session = Mem01Session("c1", "u1", inner=SQLiteSession("c1", tmp_path / "t.sqlite"),
                           memory=memory)  # fmt: skip
    with locked(db_url, "mem01session_version"):
        with pytest.raises(DatabaseError, match=r"schema could not be read within 0\.3 s"):
            await bounded(Database.open(db_url))
        model = await bounded(ask(session, "I live in Oslo."))
    (call,) = model.calls  # the run was answered, without memory
    assert "<memory" not in json.dumps(call.input)
    error = session.last_memory_error
    assert error is not None and "a migration running elsewhere may hold a lock" in error
    await memory.aclose()


async def test_a_correction_fails_and_says_why_while_the_beliefs_are_locked(
    make_session: Callable[..., Mem01Session], db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(verbs_module, "VERB_TIMEOUT_SECONDS", 0.3)
    session = make_session("c1")
    await ask(session, "I live in Oslo.")
    assert await session.flush_memory()
    [belief] = await session.memory.beliefs(session.user_id, include_inactive=True)
    with locked(db_url, "beliefs"):
        for call in (
            session.memory.correct(session.user_id, belief.id, "Lives in Bergen"),
            session.memory.forget(session.user_id, belief.id),
            session.memory.beliefs(session.user_id, include_inactive=True),
        ):
            with pytest.raises(Mem01MemoryError, match=r"did not answer within 0\.3 s"):
                await bounded(call)
    [after] = await session.memory.beliefs(
        session.user_id, include_inactive=True
    )  # the lock gone: nothing was changed
    assert (after.id, after.content, after.status) == (belief.id, "Lives in Oslo", "active")
