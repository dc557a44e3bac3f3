"""Benchmark 5: write path throughput with 1, 4, 16 and 64 concurrent users.

ops/s: ``engine.apply`` batches of 5 ADD ops, each user its own sequence of batches, the
users concurrent (asyncio, one process, the engine's connection pool).
jobs/s: :data:`JOB_COUNT` turns spread over the users, enqueued as jobs (as
``Mem01Session.add_items`` does), then processed by one started ``MemoryWorker`` (its own
loop: up to ``WorkerPolicy.concurrency`` users' turns at once, each user's in order) with
the rule extractor until none is left. The turns' vectors are precomputed, as for every
system in these benchmarks; in an application the worker reuses the vector its run made of
the turn's text (the embedder keeps its recent texts').
"""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime

from mem01session.engine import BeliefEngine
from mem01session.engine.ops import Op, Provenance
from mem01session.extraction.rules import RuleExtractor
from mem01session.queue import JobStore
from mem01session.queue.turns import TurnMessage
from mem01session.queue.worker import MemoryWorker

from .common import PrecomputedEmbedder, Server, open_memory
from .synthetic import fact

USERS = (1, 4, 16, 64)
JOB_COUNT = 512  # jobs per measurement, spread over the users
TURNS = [
    "I live in {city} and I work as a {job}.",
    "My favourite food is {food}.",
    "I moved to {city} last month.",
    "Can you recommend a film for tonight?",
]
CITIES = ["Boston", "Denver", "Lisbon", "Kyoto", "Oslo", "Lima"]
JOBS = ["nurse", "teacher", "plumber", "designer"]
FOODS = ["ramen", "tacos", "pizza", "curry"]


@dataclass
class WriteResult:
    ops_per_s: dict[int, float] = field(default_factory=dict)
    jobs_per_s: dict[int, float] = field(default_factory=dict)
    batches: int = 0
    jobs: int = 0


async def _ops(engine: BeliefEngine, emb: PrecomputedEmbedder, users: int, batches: int) -> float:
    rng = random.Random(users)
    plans = {
        f"w{users}-{u}": [
            [Op.add(f"{fact(rng)} #{b}.{k}") for k in range(5)] for b in range(batches)
        ]
        for u in range(users)
    }
    emb.prefill([op.content or "" for p in plans.values() for batch in p for op in batch])
    prov = Provenance(session_id="bench", extractor="bench")

    async def one(user: str, plan: list[list[Op]]) -> None:
        for batch in plan:
            await engine.apply(user, batch, provenance=prov)

    started = time.perf_counter()
    await asyncio.gather(*(one(u, p) for u, p in plans.items()))
    return users * batches * 5 / (time.perf_counter() - started)


async def _jobs(engine: BeliefEngine, emb: PrecomputedEmbedder, users: int, per_user: int) -> float:
    rng = random.Random(100 + users)
    now = datetime(2026, 3, 1, tzinfo=UTC)
    store = JobStore(engine.db)
    texts = []
    for u in range(users):
        for t in range(per_user):
            text = rng.choice(TURNS).format(
                city=rng.choice(CITIES), job=rng.choice(JOBS), food=rng.choice(FOODS)
            )
            texts.append(text)
            messages = [TurnMessage("user", text), TurnMessage("assistant", "Noted.")]
            await store.enqueue(f"j{users}-{u}", f"s{users}-{u}-{t}", messages, now=now)
    emb.prefill(texts)
    engine.token_counter.count("loaded")  # the tokenizer's first load is not timed
    worker = MemoryWorker(engine, RuleExtractor())
    total = users * per_user
    started = time.perf_counter()
    worker.start()
    try:
        while worker.processed < total:
            await worker.wait_progress(1.0)
            if worker.processed < total and not await _unfinished(engine):
                break  # none left: a job failed (reported below)
    finally:
        await worker.stop()
    if worker.last_error:
        raise RuntimeError(f"the worker failed a job: {worker.last_error}")
    return worker.processed / (time.perf_counter() - started)


async def _unfinished(engine: BeliefEngine) -> int:
    rows = await engine.db.direct.fetch(
        "SELECT count(*) AS n FROM memory_jobs WHERE status IN ('pending', 'running')", {}
    )
    return int(rows[0]["n"])


async def run(
    server: Server, emb: PrecomputedEmbedder, batches: int = 40, per_user_jobs: int = 0
) -> WriteResult:
    memory = await open_memory(server.database("w_mem01session"), emb)
    engine = await memory.engine()
    out = WriteResult(batches=batches)
    try:
        for users in USERS:
            out.ops_per_s[users] = await _ops(engine, emb, users, max(4, batches // users * 2))
        for users in USERS:
            per_user = per_user_jobs or JOB_COUNT // users
            out.jobs = users * per_user
            out.jobs_per_s[users] = await _jobs(engine, emb, users, per_user)
    finally:
        await memory.aclose()
    return out


def table(r: WriteResult) -> str:
    lines = ["| concurrent users | ops applied / s | jobs processed / s |", "|---:|---:|---:|"]
    for users in USERS:
        lines.append(f"| {users} | {r.ops_per_s[users]:,.0f} | {r.jobs_per_s[users]:,.1f} |")
    return "\n".join(lines)
