"""Data and timing for ``bench.scale_out``: beliefs loaded by COPY, recalls timed in order.

The same plan (users and beliefs per user) and seed give the same rows on any target, a
single server or a cluster's coordinator (COPY into a distributed table goes through the
coordinator to the shards).
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from dataclasses import dataclass

from mem01session.db import Database, migrate
from mem01session.engine import BeliefEngine

from .common import PrecomputedEmbedder, percentiles
from .synthetic import NOW, copy_rows, queries, synthetic_rows, time_recalls

Plan = Sequence[tuple[str, int]]


def ordinary_users(count: int, prefix: str = "user") -> list[str]:
    return [f"{prefix}-{i:06d}" for i in range(count)]


def load(url: str, emb: PrecomputedEmbedder, plan: Plan, *, seed: int = 7) -> int:
    """Migrate, then COPY the planned beliefs (one source each); returns how many."""
    migrate.upgrade(url, embedding_dim=emb.dim, embedding_model=emb.name)
    rows = synthetic_rows(plan, seed=seed)
    emb.prefill([row[1] for row in rows])
    copy_rows(url, emb, rows)
    return len(rows)


@dataclass(frozen=True)
class Timing:
    p50: float
    p95: float
    p99: float
    calls: int


async def time_recall(
    url: str, emb: PrecomputedEmbedder, users: Sequence[str], *, calls: int, warmup: int
) -> Timing:
    """``calls`` sequential ``engine.recall`` (800 tokens) over ``users``, after ``warmup``;
    the query embeddings precomputed."""
    texts = queries(random.Random(3), 200)
    emb.prefill(texts)
    rng = random.Random(5)
    picks = [rng.choice(users) for _ in range(warmup + calls)]
    db = await Database.open(url=url, embedding_model=emb.name, embedding_dim=emb.dim)
    try:
        engine = BeliefEngine(db, emb, clock=lambda: NOW)
        samples, _, _ = await time_recalls(engine, picks, texts, calls, warmup)
    finally:
        await db.close()
    return Timing(*percentiles(samples), calls=len(samples))


def timed(action: str, started: float) -> None:
    print(f"  {action}: {time.perf_counter() - started:.1f} s", flush=True)
