"""Erase while jobs are in flight, many times over.

Each round gives a user beliefs and three queued turns, holds the worker at one stage of
a job (inside the extractor, inside the apply transaction, or not started), erases, lets
the worker go and drains the queue, then resumes once more as a fresh worker past every
lease. After the receipt nothing of the user remains in any table but the tombstone, and
nothing reappears later, whether or not the user was reinstated right after the erase.
(``bench/soak.py`` runs 100 rounds.)
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import text

from mem01session.db import Database
from mem01session.embeddings import HashingEmbedder
from mem01session.engine import BeliefEngine
from mem01session.engine.ops import Op, Provenance
from mem01session.extraction import Candidate, Extraction, RuleExtractor, Turn, TurnMessage
from mem01session.queue import JobStore
from mem01session.queue.worker import MemoryWorker, WorkerPolicy
from tests.reliability.harness import counts, fact_line

ROUNDS = 12  # bench/soak.py: 100
STAGES = ("extracting", "committing", "queued")


class Gate:
    def __init__(self) -> None:
        self.reached = asyncio.Event()
        self.open = asyncio.Event()

    async def hold(self) -> None:
        self.reached.set()
        await self.open.wait()


class GatedExtractor:
    name = "gated"

    def __init__(self, gate: Gate | None) -> None:
        self.inner = RuleExtractor()
        self.gate = gate

    async def extract(
        self, turn: Turn, candidates: Sequence[Candidate], now: datetime
    ) -> Extraction:
        if self.gate is not None:
            await self.gate.hold()
        return await self.inner.extract(turn, candidates, now)


class GatedEngine(BeliefEngine):
    """Holds the worker's first write inside its transaction (after the ops, before the
    commit)."""

    gate: Gate | None = None

    async def apply_group(self, batches: Any, hook: Any = None) -> Any:
        gate, self.gate = self.gate, None

        async def held(tx: Any) -> None:
            if gate is not None:
                await gate.hold()
            if hook is not None:
                await hook(tx)

        return await super().apply_group(batches, held)


async def erase_waiting_on_lock(db: Database) -> bool:
    async with db.sa_engine.connect() as conn:
        waiting = await conn.scalar(
            text("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted")
        )
    return bool(waiting)


async def erase_round(
    db: Database, embedder: HashingEmbedder, round_no: int, stage: str, reinstate: bool
) -> dict[str, int]:
    user = f"erased-{round_no}"
    engine = GatedEngine(db, embedder)
    gate = Gate()
    await engine.apply(user, [Op.add("Likes green tea")], provenance=Provenance(extractor="seed"))
    for n in range(3):
        await JobStore(db).enqueue(
            user, "c", [TurnMessage("user", fact_line(n)[0])], now=engine.clock()
        )
    if stage == "committing":
        engine.gate = gate
    worker = MemoryWorker(
        engine,
        GatedExtractor(gate if stage == "extracting" else None),
        policy=WorkerPolicy(poll_interval=0.01),
    )
    if stage != "queued":
        worker.start()
        await gate.reached.wait()
    if stage == "committing":
        # The erase queues behind the apply transaction's lock; the apply then commits
        # and the erase deletes what it wrote.
        erase = asyncio.create_task(engine.erase_user(user))
        while not await erase_waiting_on_lock(db):
            await asyncio.sleep(0)
            assert not erase.done()
        gate.open.set()
        receipt = await erase
        assert receipt.deleted["beliefs"] >= 2
    else:
        receipt = await engine.erase_user(user)
        assert receipt.deleted["memory_jobs"] == 3
    if reinstate:
        await engine.reinstate_user(user)
    left = await counts(db.sa_engine, user)
    gate.open.set()
    worker.start()
    while await worker.run_once():
        pass
    await worker.stop()
    # A fresh worker long after every lease finds nothing to bring back either.
    later = BeliefEngine(db, embedder, clock=lambda: engine.clock() + timedelta(hours=1))
    while await MemoryWorker(later, RuleExtractor()).run_once():
        pass
    after = await counts(db.sa_engine, user)
    assert left == after, (left, after)
    return after


async def test_erase_while_jobs_are_in_flight(db: Database, embedder: HashingEmbedder) -> None:
    async with asyncio.timeout(120):
        for i in range(ROUNDS):
            after = await erase_round(db, embedder, i, STAGES[i % 3], reinstate=bool(i // 3 % 2))
            assert after == {
                "beliefs": 0,
                "belief_events": 0,
                "belief_sources": 0,
                "belief_terms": 0,
                "belief_twins": 0,
                "episodes": 0,
                "episode_terms": 0,
                "memory_jobs": 0,
                "memory_users": 1,  # the tombstone (or the reinstated, empty user)
            }
