"""Benchmark 1: recall latency vs scale, every system on the same rows and vectors.

Rows come from :func:`bench.synthetic.synthetic_rows` (100 beliefs per user, ~10%
superseded). Each system's tables are filled by COPY in the shape its own write path
produces (mem0: active rows only, as it overwrites; the peers' HNSW indexes are dropped
before the COPY and rebuilt with the peers' own DDL after it). Then each system's recall
call is timed in its own process, query embeddings precomputed, the systems taking turns
in rounds (:data:`ROUNDS`) so that the machine's slow spells fall on all of them.
"""

from __future__ import annotations

import functools
import hashlib
import random
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from .common import PrecomputedEmbedder, Server, percentiles, scratch, vector_binary
from .peer_client import Peer, PeerError
from .synthetic import Row, copy_rows, queries, synthetic_rows

PER_USER = 100
FLOOR = "floor (bare pgvector KNN)"
# The timed queries are split into this many rounds, each system taking its turn in each.
ROUNDS = 5


@dataclass
class LatencyResult:
    scales: list[int] = field(default_factory=list)
    # system -> scale -> (p50, p95, p99, mean results returned)
    table: dict[str, dict[int, tuple[float, float, float, float]]] = field(default_factory=dict)
    load_s: dict[str, dict[int, float]] = field(default_factory=dict)
    failures: dict[str, str] = field(default_factory=dict)
    queries: int = 0
    rounds: int = 1


def copy_mem0(
    url: str, emb: PrecomputedEmbedder, said: Iterable[tuple[str, str, datetime]]
) -> None:
    """Messages (user, text, when) in mem0's table as ``add(..., infer=False)`` stores
    them; its HNSW index dropped before the COPY and rebuilt after with mem0's own DDL."""
    with psycopg.connect(url) as conn:
        conn.execute("DROP INDEX IF EXISTS mem0_hnsw_idx")
        with (
            conn.cursor() as cur,
            cur.copy("COPY mem0 (id, vector, payload) FROM STDIN (FORMAT BINARY)") as copy,
        ):
            copy.set_types(["uuid", "bytea", "jsonb"])
            for user, text, when in said:
                payload = {
                    "data": text,
                    "hash": hashlib.md5(text.encode()).hexdigest(),
                    "text_lemmatized": text,
                    "user_id": user,
                    "created_at": when.isoformat(),
                    "updated_at": when.isoformat(),
                }
                copy.write_row((uuid.uuid4(), vector_binary(emb.cache[text]), Jsonb(payload)))
        conn.execute("SET maintenance_work_mem = '1GB'")
        conn.execute(
            "CREATE INDEX IF NOT EXISTS mem0_hnsw_idx ON mem0 USING hnsw (vector vector_cosine_ops)"
        )
        conn.commit()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("VACUUM (ANALYZE) mem0")


def _copy_mem0(url: str, emb: PrecomputedEmbedder, rows: list[Row]) -> None:
    """The active beliefs' texts (mem0 overwrites what changed)."""
    copy_mem0(url, emb, [(u, text, start) for u, text, status, _, start, _ in rows
                         if status == "active"])  # fmt: skip


def _copy_mem01_engine(url: str, emb: PrecomputedEmbedder, rows: list[Row]) -> None:
    with psycopg.connect(url) as conn:
        conn.execute("DROP INDEX IF EXISTS idx_embeddings_hnsw")
        ids = [uuid.uuid4().hex for _ in rows]
        with conn.cursor() as cur:
            with cur.copy(
                "COPY beliefs (id, content, status, confidence, valid_from, valid_to, scope, "
                "user_id, source, created_at, updated_at, metadata) FROM STDIN"
            ) as copy:
                for bid, (user, text, status, conf, start, end) in zip(ids, rows, strict=True):
                    copy.write_row(
                        (bid, text, status, conf, start, end, "user", user, "extraction",
                         start, end or start, "{}")
                    )  # fmt: skip
            with cur.copy(
                "COPY embeddings (belief_id, embedding, dim) FROM STDIN (FORMAT BINARY)"
            ) as copy:
                copy.set_types(["text", "bytea", "int4"])
                for bid, row in zip(ids, rows, strict=True):
                    copy.write_row((bid, vector_binary(emb.cache[row[1]]), emb.dim))
        conn.execute("SET maintenance_work_mem = '1GB'")
        conn.execute(
            "CREATE INDEX IF NOT EXISTS idx_embeddings_hnsw ON embeddings "
            "USING hnsw (embedding vector_cosine_ops)"
        )
        conn.commit()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("VACUUM (ANALYZE) beliefs")
        conn.execute("VACUUM (ANALYZE) embeddings")


Samples = tuple[list[float], list[int]]  # ms per recall, results returned per recall


def _samples_by(
    driver: Peer,
    emb: PrecomputedEmbedder,
    plan: list[tuple[str, str]],
    warmup: int,
    **options: int,
) -> Samples:
    """Each recall's wall time and results returned, timed in ``driver``'s process (each
    query sent with its precomputed vector); the first ``warmup`` are not kept."""
    reply = driver.call(
        "latency",
        warmup=warmup,
        queries=[{"user": u, "query": q, "vector": emb.cache[q]} for u, q in plan],
        **options,
    )
    return list(reply["ms"]), list(reply["returned"])


def _peer_samples(
    peer: Peer, emb: PrecomputedEmbedder, plan: list[tuple[str, str]], warmup: int
) -> Samples:
    return _samples_by(peer, emb, plan, warmup, k=20)


def _floor_samples(
    conn: psycopg.Connection[Any], emb: PrecomputedEmbedder, plan: list[tuple[str, str]],
    warmup: int,
) -> Samples:  # fmt: skip
    sql = (
        "SELECT id FROM beliefs WHERE user_id = %s AND status = 'active' "
        "ORDER BY embedding <=> %s::vector LIMIT 10"
    )
    samples: list[float] = []
    for i, (user, query) in enumerate(plan):
        vec = "[" + ",".join(map(str, emb.cache[query])) + "]"
        started = time.perf_counter()
        conn.execute(sql, (user, vec)).fetchall()
        if i >= warmup:
            samples.append((time.perf_counter() - started) * 1000.0)
    return samples, [10] * len(samples)


def _summary(samples: Samples) -> tuple[float, float, float, float]:
    ms, returned = samples
    p50, p95, p99 = percentiles(ms)
    return p50, p95, p99, sum(returned) / len(returned)


async def run(
    server: Server,
    emb: PrecomputedEmbedder,
    scales: list[int],
    *,
    peer_max: int,
    n_queries: int,
    warmup: int,
    log: Path,
) -> LatencyResult:
    out = LatencyResult(scales=scales, queries=n_queries, rounds=ROUNDS)
    texts = queries(random.Random(3), 200)
    await emb.aprefill(texts)
    url = server.database("l_mem01session")
    # Timed in a process of its own, as the peers are (bench/ours_driver.py); its setup
    # migrates the database the rows are copied into.
    ours = Peer("mem01session", log)
    peers: dict[str, tuple[Peer, str]] = {}
    floor = psycopg.connect(url, autocommit=True, prepare_threshold=0)
    try:
        ours.call("setup", url=url, dim=emb.dim, model=emb.name)
        for name in ("mem0", "mem01-engine"):
            try:
                peer = Peer(name, log)
                purl = server.database("l_" + name.replace("-", "_"))
                peer.setup(purl, emb.dim, scratch())
                peers[name] = (peer, purl)
            except (PeerError, OSError) as exc:
                out.failures[name] = str(exc)
        loaded = 0
        for scale in sorted(scales):
            users = scale // PER_USER
            rows = synthetic_rows(
                [(f"user-{i:05d}", PER_USER) for i in range(loaded // PER_USER, users)], seed=scale
            )
            await emb.aprefill([row[1] for row in rows])  # embedding is not loading
            started = time.perf_counter()
            copy_rows(url, emb, rows)
            out.load_s.setdefault("mem01session", {})[scale] = time.perf_counter() - started
            timers: dict[str, Callable[[list[tuple[str, str]], int], Samples]] = {
                FLOOR: lambda plan, w: _floor_samples(floor, emb, plan, w),
                "mem01session": lambda plan, w: _samples_by(ours, emb, plan, w, max_tokens=800),
            }
            for name, (peer, purl) in list(peers.items()):
                if scale > peer_max:
                    continue
                try:
                    started = time.perf_counter()
                    (_copy_mem0 if name == "mem0" else _copy_mem01_engine)(purl, emb, rows)
                    out.load_s.setdefault(name, {})[scale] = time.perf_counter() - started
                except (PeerError, OSError, psycopg.Error) as exc:
                    out.failures[name] = f"at {scale:,} beliefs: {exc}"
                    peers.pop(name)
                    peer.close()
                    continue
                timers[name] = functools.partial(_peer_samples, peer, emb)
            rng = random.Random(scale)
            plan = [
                (f"user-{rng.randrange(users):05d}", rng.choice(texts))
                for _ in range(n_queries + warmup)
            ]
            samples = _interleaved(timers, plan, warmup, out.failures, scale)
            for name, got in samples.items():
                out.table.setdefault(name, {})[scale] = _summary(got)
            for name in [n for n in peers if n in out.failures]:
                peers.pop(name)[0].close()
            loaded = users * PER_USER
    finally:
        floor.close()
        ours.close()
        for peer, _ in peers.values():
            peer.close()
    return out


def _interleaved(
    timers: dict[str, Callable[[list[tuple[str, str]], int], Samples]],
    plan: list[tuple[str, str]],
    warmup: int,
    failures: dict[str, str],
    scale: int,
) -> dict[str, Samples]:
    """The timed queries in :data:`ROUNDS` rounds, every system taking its turn in each
    (the order rotating), so that a slow spell of the machine falls on all of them alike.
    Each system warms up on the first ``warmup`` queries before its first round."""
    timed = plan[warmup:]
    size = -(-len(timed) // ROUNDS)
    chunks = [timed[i : i + size] for i in range(0, len(timed), size)]
    samples: dict[str, Samples] = {name: ([], []) for name in timers}
    names = list(timers)
    for r, chunk in enumerate(chunks):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            if name not in samples:
                continue
            first = r == 0
            try:
                ms, ret = timers[name](plan[:warmup] + chunk if first else chunk,
                                       warmup if first else 0)  # fmt: skip
            except (PeerError, OSError, psycopg.Error) as exc:
                failures[name] = f"at {scale:,} beliefs: {exc}"
                del samples[name]
                continue
            samples[name][0].extend(ms)
            samples[name][1].extend(ret)
    return samples


def table(result: LatencyResult) -> str:
    lines = [
        "| beliefs | system | p50 ms | p95 ms | p99 ms | p50 / mem01session p50 "
        "| mean results returned |",
        "|---:|---|---:|---:|---:|---:|---:|",
    ]
    for scale in result.scales:
        ours = result.table.get("mem01session", {}).get(scale)
        for name, by_scale in result.table.items():
            if scale not in by_scale:
                continue
            p50, p95, p99, ret = by_scale[scale]
            ratio = f"{p50 / ours[0]:.2f}x" if ours else "-"
            lines.append(
                f"| {scale:,} | {name} | {p50:.2f} | {p95:.2f} | {p99:.2f} | {ratio} | {ret:.1f} |"
            )
    return "\n".join(lines)
