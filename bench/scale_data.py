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

import psycopg

from mem01session.db import Database, migrate
from mem01session.engine import BeliefEngine
from mem01session.engine.rows import normalize_content

from .common import PrecomputedEmbedder, percentiles, vector_binary
from .synthetic import NOW, queries, synthetic_rows, time_recalls

Plan = Sequence[tuple[str, int]]


def ordinary_users(count: int, prefix: str = "user") -> list[str]:
    return [f"{prefix}-{i:06d}" for i in range(count)]


def load(url: str, emb: PrecomputedEmbedder, plan: Plan, *, seed: int = 7) -> int:
    """Migrate, then COPY the planned beliefs (one source each); returns how many."""
    migrate.upgrade(url, embedding_dim=emb.dim, embedding_model=emb.name)
    rows = synthetic_rows(plan, seed=seed)
    emb.prefill([row[1] for row in rows])
    with psycopg.connect(url) as conn, conn.cursor() as cur:
        with cur.copy(
            "COPY beliefs (user_id, content, norm_content, status, confidence, valid_from, "
            "valid_to, updated_at, embedding, embedding_model) FROM STDIN (FORMAT BINARY)"
        ) as copy:
            copy.set_types(
                ["text", "text", "text", "text", "float8", "timestamptz", "timestamptz",
                 "timestamptz", "bytea", "text"]
            )  # fmt: skip
            for user_id, text, status, conf, start, end in rows:
                vec = vector_binary(emb.cache[text])
                copy.write_row(
                    (user_id, text, normalize_content(text), status, conf, start, end,
                     end or start, vec, emb.name)
                )  # fmt: skip
        users = sorted({user for user, _ in plan})
        cur.execute(
            "INSERT INTO belief_sources (user_id, belief_id, session_id, evidence, observed_at, "
            "extractor) SELECT b.user_id, b.id, 'sess-' || (b.id %% 97), 'I said: ' || b.content, "
            "b.valid_from, 'bench' FROM beliefs b WHERE b.user_id = ANY(%s)",
            (users,),
        )
        conn.commit()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("VACUUM (ANALYZE) beliefs")
        conn.execute("VACUUM (ANALYZE) belief_sources")
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
