"""Concurrency: many conversations of one user at once; many users at once.

Twenty conversations of one user talk at the same time through two engines (two
connection pools and two workers, as two processes would), repeating the same fact and
stating conflicting ones. Afterwards: one active belief per fact, at most one active
home city, the ledger replays to the final state, and it all finished (bounded by
``asyncio.timeout``; a deadlock would hit it). Fifty users writing and recalling at once
never see each other's beliefs. The four-process and 200-user variants, with timings,
are in ``bench/soak.py``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from agents.memory import SQLiteSession

from mem01session.db import Database
from mem01session.embeddings import HashingEmbedder
from mem01session.engine import BeliefEngine
from mem01session.engine.ops import Op, Provenance
from mem01session.extraction import RuleExtractor
from mem01session.session import Mem01Session
from tests.reliability.harness import check_invariants, place_name, say
from tests.session.conftest import MemoryFactory

CONVERSATIONS = 20
USERS = 50
CITIES = ("Lisbon", "Porto", "Faro")


@pytest.fixture
async def second_db(db_url: str, embedder: HashingEmbedder) -> AsyncIterator[Database]:
    database = await Database.open(
        url=db_url, embedding_model=embedder.name, embedding_dim=embedder.dim
    )
    yield database
    await database.close()


@pytest.mark.slow
async def test_concurrent_conversations_of_one_user(
    engine: BeliefEngine,
    second_db: Database,
    embedder: HashingEmbedder,
    memories: MemoryFactory,
    tmp_path: Path,
) -> None:
    user = "uma"
    extractor = RuleExtractor()
    apps = (
        memories(extractor=extractor),
        memories(engine=BeliefEngine(second_db, embedder), extractor=extractor),
    )
    sessions = [
        Mem01Session(
            f"conv-{i}",
            user,
            inner=SQLiteSession(f"conv-{i}", tmp_path / "t.sqlite"),
            memory=apps[i % 2],
        )
        for i in range(CONVERSATIONS)
    ]

    async def talk(i: int, s: Mem01Session) -> None:
        await say(s, "I have a dog named Rex.")
        await say(s, f"I live in {CITIES[i % len(CITIES)]}.")
        await say(s, "I have a dog named Rex.")

    async with asyncio.timeout(180):
        await asyncio.gather(*(talk(i, s) for i, s in enumerate(sessions)))
        assert all([await s.flush_memory(timeout=120) for s in sessions])
    for s in sessions:
        assert s.last_memory_error is None, s.last_memory_error

    rows = await check_invariants(engine.db.sa_engine, user)
    active = [r.content for r in rows if r.status == "active"]
    assert active.count("Has a dog named Rex") == 1
    cities = [r.content for r in rows if r.status == "active" and r.key == "home.city"]
    assert len(cities) == 1 and cities[0].removeprefix("Lives in ") in CITIES
    ledger = await engine.ledger(user, limit=1000)
    assert sum(e.op == "ADD" and "Rex" in str(e.after) for e in ledger) == 1
    rex = next(r.id for r in rows if r.content == "Has a dog named Rex")
    # Every restatement confirmed the one belief: each turn applied once, none lost.
    assert sum(e.op == "CONFIRM" and e.belief_id == rex for e in ledger) == 2 * CONVERSATIONS - 1
    for s in sessions:
        await s.aclose()


async def test_many_users_at_once_never_cross(engine: BeliefEngine) -> None:
    users = [f"tenant-{i}" for i in range(USERS)]

    async def one(i: int, user: str) -> None:
        city = place_name(i)
        await engine.apply(
            user,
            [Op.add(f"Lives in {city}", key="home.city"), Op.add("Likes green tea")],
            provenance=Provenance(session_id=f"s-{i}", extractor="test"),
        )
        result = await engine.recall(user, "where do I live and what do I drink?")
        assert {b.belief.user_id for b in result.beliefs} == {user}
        others = {f"Lives in {place_name(j)}" for j in range(USERS) if j != i}
        assert not any(o in result.text for o in others)
        assert f"Lives in {city}" in result.text

    async with asyncio.timeout(120):
        await asyncio.gather(*(one(i, u) for i, u in enumerate(users)))
    for user in users:
        rows = await check_invariants(engine.db.sa_engine, user)
        assert len(rows) == 2
