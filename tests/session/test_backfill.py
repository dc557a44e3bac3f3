"""Backfill: conversations an application kept in the SDK's ``SQLiteSession`` (written by the
real SDK, then dated in the past) fed through memory's pipeline, once."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
import pytest
from agents import SQLiteSession

from mem01session import Memory
from mem01session.embeddings import HashingEmbedder
from mem01session.errors import ConfigError
from mem01session.extraction.base import Candidate, Extraction, Turn
from mem01session.queue import JobStore
from mem01session.session.backfill import Store, backfill
from tests.child_env import pythonpath, wait_for
from tests.conftest import TEST_DIM
from tests.session.conftest import MemoryFactory

ROOT = Path(__file__).resolve().parents[2]
MONDAY = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def user(text: str) -> dict[str, object]:
    return {"role": "user", "content": text}


def answer(text: str) -> dict[str, object]:
    return {
        "type": "message",
        "role": "assistant",
        "id": f"msg_{abs(hash(text))}",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


async def keep(path: Path, session_id: str, turns: list[str], start: datetime) -> None:
    """``turns`` as the SDK stores a run's items, each exchange an hour after the last."""
    store = SQLiteSession(session_id, path)
    for said in turns:
        await store.add_items([user(said), answer("Noted.")])  # type: ignore[list-item]
    store.close()
    with sqlite3.connect(path) as conn:
        ids = [r[0] for r in conn.execute(
            "SELECT id FROM agent_messages WHERE session_id = ? ORDER BY id", (session_id,)
        )]  # fmt: skip
        for n, item_id in enumerate(ids):
            at = start + timedelta(hours=n // 2)
            conn.execute(
                "UPDATE agent_messages SET created_at = ? WHERE id = ?",
                (at.strftime("%Y-%m-%d %H:%M:%S"), item_id),
            )


async def test_each_turn_becomes_an_episode_dated_when_it_was_said_and_its_beliefs(
    memory: Memory, tmp_path: Path
) -> None:
    path = tmp_path / "app.sqlite"
    await keep(path, "chat-b", ["I moved to Porto", "I like trains"], MONDAY + timedelta(days=2))
    await keep(path, "chat-a", ["I live in Lisbon", "My sister is called Ana"], MONDAY)
    report = await backfill(memory, path, "alice")
    assert (report.conversations, report.turns, report.recorded) == (2, 4, 4)
    said = [(e.session_id, e.content, e.said_at) for e in await memory.episodes("alice")]
    assert said == [
        ("chat-a", "I live in Lisbon", MONDAY),
        ("chat-a", "My sister is called Ana", MONDAY + timedelta(hours=1)),
        ("chat-b", "I moved to Porto", MONDAY + timedelta(days=2)),
        ("chat-b", "I like trains", MONDAY + timedelta(days=2, hours=1)),
    ]
    # Extracted in time order: Lisbon first, then the move supersedes it.
    assert [b.content for b in await memory.beliefs("alice")] == ["Lives in Porto"]
    [old] = [
        b
        for b in await memory.beliefs("alice", include_inactive=True)
        if b.content == "Lives in Lisbon"
    ]
    assert old.valid_from == MONDAY and old.status == "superseded"

    again = await backfill(memory, path, "alice")
    assert (again.turns, again.recorded) == (4, 0)
    assert len(await memory.episodes("alice")) == 4


async def test_a_turn_answered_after_a_backfill_is_not_recorded_again(
    memory: Memory, tmp_path: Path
) -> None:
    """The key held the reply's words too: a reply stored later made the turn new."""
    path = tmp_path / "app.sqlite"
    store = SQLiteSession("chat", path)
    await store.add_items([user("I live in Porto.")])  # type: ignore[list-item]
    first = await backfill(memory, path, "alice")
    await store.add_items([answer("Noted.")])  # type: ignore[list-item]
    store.close()
    again = await backfill(memory, path, "alice")
    assert (first.recorded, again.turns, again.recorded) == (1, 1, 0)
    assert [e.content for e in await memory.episodes("alice")] == ["I live in Porto."]


async def test_a_turn_an_earlier_release_recorded_is_not_recorded_again(
    memory: Memory, tmp_path: Path
) -> None:
    path = tmp_path / "app.sqlite"
    await keep(path, "chat", ["I live in Lisbon"], MONDAY)
    [turn] = list(Store(path).turns("chat"))
    jobs = JobStore((await memory.engine()).db)
    await jobs.enqueue(  # as releases before 0.2 keyed it
        "alice", "chat", turn.messages, now=turn.said_at, idempotency_key=turn.legacy_key
    )
    report = await backfill(memory, path, "alice")
    assert (report.turns, report.recorded) == (1, 0)


async def test_items_that_are_not_json_are_skipped_and_counted(
    memory: Memory, tmp_path: Path
) -> None:
    path = tmp_path / "app.sqlite"
    await keep(path, "chat", ["I live in Lisbon", "I like trains"], MONDAY)
    with sqlite3.connect(path) as conn:
        conn.execute(
            "INSERT INTO agent_messages (session_id, message_data) VALUES ('chat', '{broken')"
        )
    report = await backfill(memory, path, "alice")
    assert (report.turns, report.recorded, report.unreadable) == (2, 2, 1)
    assert [e.content for e in await memory.episodes("alice")] == [
        "I live in Lisbon",
        "I like trains",
    ]


async def test_whose_each_conversation_is_comes_from_a_map_or_a_column(
    memory: Memory, tmp_path: Path
) -> None:
    path = tmp_path / "app.sqlite"
    await keep(path, "c1", ["I live in Oslo"], MONDAY)
    await keep(path, "c2", ["I live in Rome"], MONDAY)
    await keep(path, "c3", ["I live in Nice"], MONDAY)
    report = await backfill(memory, path, {"c1": "ola", "c2": "rita"})
    assert report.left_out == ["c3"]
    assert [b.content for b in await memory.beliefs("rita")] == ["Lives in Rome"]
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE owners (session_id TEXT, owner TEXT)")
        conn.execute("INSERT INTO owners VALUES ('c3', 'nina')")
    store = Store(path)
    try:
        from mem01session.session.backfill import users_from_column

        await backfill(memory, store, users_from_column(store, "owners.owner"))
    finally:
        store.close()
    assert [b.content for b in await memory.beliefs("nina")] == ["Lives in Nice"]
    with pytest.raises(ConfigError, match="say whose the conversations are"):
        await backfill(memory, path)
    with pytest.raises(ConfigError, match="no session store"):
        await backfill(memory, tmp_path / "missing.sqlite", "x")
    # a SQLite file of something else (it was a raw OperationalError quoting the SQL), and
    # users of no kind it takes (a TypeError: "'int' object is not callable")
    other = tmp_path / "other.sqlite"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE notes (id INTEGER)")
    with pytest.raises(ConfigError, match="is not an SDK session store: it has no agent_messages"):
        await backfill(memory, other, "x")
    with pytest.raises(ConfigError, match="users must be one user id, a map of session id"):
        await backfill(memory, path, 5)  # type: ignore[arg-type]


def _episodes(url: str) -> tuple[int, int]:
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*), count(DISTINCT (session_id, content)) FROM episodes"
        ).fetchone()
    assert row is not None
    return int(row[0]), int(row[1])


@pytest.mark.slow
async def test_a_backfill_killed_midway_and_run_again_records_every_turn_once(
    db_url: str, tmp_path: Path
) -> None:
    path = tmp_path / "app.sqlite"
    for n in range(6):
        await keep(
            path,
            f"chat-{n:02d}",
            [f"Note {n}-{t}: I bought {t} apples" for t in range(10)],
            MONDAY + timedelta(days=n),
        )
    turns = 6 * 10
    env = dict(os.environ)
    env |= {
        "MEM01_DATABASE_URL": db_url,
        "MEM01_EMBEDDING_MODEL": HashingEmbedder(TEST_DIM).name,
        "PYTHONPATH": pythonpath(ROOT),
    }
    command = [sys.executable, "-m", "mem01session", "backfill", str(path), "--user", "alice"]
    child = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        wait_for(lambda: _episodes(db_url)[0] >= 15, child)  # some turns stored
    finally:
        child.send_signal(signal.SIGKILL)
        child.communicate()
    stored, distinct = _episodes(db_url)
    assert 15 <= stored < turns and stored == distinct

    again = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    assert again.stdout.splitlines()[-1].startswith(f"6 conversation(s), {turns} turn(s)")
    assert _episodes(db_url) == (turns, turns)


@dataclass
class Clocked:
    """An extractor that proposes nothing and notes the time it was told it is."""

    name: str = "clocked"
    told: list[datetime] = field(default_factory=list)

    async def extract(
        self, turn: Turn, candidates: Sequence[Candidate], now: datetime
    ) -> Extraction:
        self.told.append(now)
        return Extraction(ops=())


async def test_the_extractor_is_told_it_is_when_the_turn_was_said(
    memories: MemoryFactory, tmp_path: Path
) -> None:
    path = tmp_path / "app.sqlite"
    await keep(path, "c1", ["I moved to Porto yesterday", "Thanks"], MONDAY)
    extractor = Clocked()
    await backfill(memories(extractor=extractor), path, "rui")
    assert extractor.told == [MONDAY]  # "Thanks" is small talk: not sent to it


async def test_a_session_managers_store_says_whose_each_chat_is(
    memory: Memory, tmp_path: Path
) -> None:
    from mem01session.shortterm import SessionManager

    with SessionManager(tmp_path / "chats") as manager:
        chat = manager.get_or_create("web", "zoe", "tab-1")
        chat_id = chat.session_id
    store = tmp_path / "chats" / "sessions.sqlite"
    await keep(store, chat_id, ["I live in Vienna"], MONDAY)
    report = await backfill(memory, store)
    assert report.turns == 1
    assert [b.content for b in await memory.beliefs("zoe")] == ["Lives in Vienna"]


async def test_a_store_sqlalchemysession_wrote_in_postgresql_is_read_by_its_url(
    memory: Memory, db_url: str
) -> None:
    from agents.extensions.memory.sqlalchemy_session import SQLAlchemySession
    from sqlalchemy.ext.asyncio import create_async_engine

    url = db_url.replace("postgresql://", "postgresql+psycopg://", 1)
    engine = create_async_engine(url)
    try:
        kept = SQLAlchemySession("web-1", engine=engine, create_tables=True)
        await kept.add_items([user("I live in Madrid"), answer("Noted.")])  # type: ignore[list-item]
    finally:
        await engine.dispose()
    with psycopg.connect(db_url, autocommit=True) as conn:
        conn.execute("UPDATE agent_messages SET created_at = %s", (MONDAY.replace(tzinfo=None),))
    report = await backfill(memory, url, "lea")
    assert (report.turns, report.recorded) == (1, 1)
    [said] = await memory.episodes("lea")
    assert (said.content, said.said_at) == ("I live in Madrid", MONDAY)
