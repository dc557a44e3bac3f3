"""Benchmark 1: recall latency vs scale, every system on the same rows and vectors.

Rows come from :func:`bench.synthetic.synthetic_rows` (100 beliefs per user, ~10%
superseded). Each system's tables are filled by COPY in the shape its own write path
produces (mem0: active rows only, as it overwrites; the peers' HNSW indexes are dropped
before the COPY and rebuilt with the peers' own DDL after it). Then each system's recall
call is timed in its own process, sequentially, query embeddings precomputed.
"""

from __future__ import annotations

import hashlib
import random
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
from psycopg.types.json import Jsonb

from .common import PrecomputedEmbedder, Server, percentiles, vector_binary
from .peer_client import Peer, PeerError
from .synthetic import Row, copy_rows, queries, synthetic_rows

PER_USER = 100
FLOOR = "floor (bare pgvector KNN)"


@dataclass
class LatencyResult:
    scales: list[int] = field(default_factory=list)
    # system -> scale -> (p50, p95, p99, mean results returned)
    table: dict[str, dict[int, tuple[float, float, float, float]]] = field(default_factory=dict)
    load_s: dict[str, dict[int, float]] = field(default_factory=dict)
    failures: dict[str, str] = field(default_factory=dict)
    queries: int = 0


def _copy_mem0(url: str, emb: PrecomputedEmbedder, rows: list[Row]) -> None:
    with psycopg.connect(url) as conn:
        conn.execute("DROP INDEX IF EXISTS mem0_hnsw_idx")
        with (
            conn.cursor() as cur,
            cur.copy("COPY mem0 (id, vector, payload) FROM STDIN (FORMAT BINARY)") as copy,
        ):
            copy.set_types(["uuid", "bytea", "jsonb"])
            for user, text, status, _conf, start, _end in rows:
                if status != "active":
                    continue
                payload = {
                    "data": text,
                    "hash": hashlib.md5(text.encode()).hexdigest(),
                    "text_lemmatized": text,
                    "user_id": user,
                    "created_at": start.isoformat(),
                    "updated_at": start.isoformat(),
                }
                copy.write_row((uuid.uuid4(), vector_binary(emb.cache[text]), Jsonb(payload)))
        conn.execute("SET maintenance_work_mem = '1GB'")
        conn.execute(
            "CREATE INDEX IF NOT EXISTS mem0_hnsw_idx ON mem0 USING hnsw (vector vector_cosine_ops)"
        )
        conn.commit()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("VACUUM (ANALYZE) mem0")


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


def _timed_by(
    driver: Peer,
    emb: PrecomputedEmbedder,
    plan: list[tuple[str, str]],
    warmup: int,
    **options: int,
) -> tuple[float, float, float, float]:
    """p50, p95, p99 and mean results returned of the plan's recalls, timed in ``driver``'s
    process (each query sent with its precomputed vector)."""
    reply = driver.call(
        "latency",
        warmup=warmup,
        queries=[{"user": u, "query": q, "vector": emb.cache[q]} for u, q in plan],
        **options,
    )
    ret = reply["returned"]
    p50, p95, p99 = percentiles(reply["ms"])
    return p50, p95, p99, sum(ret) / len(ret)


def _time_floor(
    url: str, emb: PrecomputedEmbedder, plan: list[tuple[str, str]], warmup: int
) -> list[float]:
    sql = (
        "SELECT id FROM beliefs WHERE user_id = %s AND status = 'active' "
        "ORDER BY embedding <=> %s::vector LIMIT 10"
    )
    samples: list[float] = []
    with psycopg.connect(url, autocommit=True, prepare_threshold=0) as conn:
        for i, (user, query) in enumerate(plan):
            vec = "[" + ",".join(map(str, emb.cache[query])) + "]"
            started = time.perf_counter()
            conn.execute(sql, (user, vec)).fetchall()
            if i >= warmup:
                samples.append((time.perf_counter() - started) * 1000.0)
    return [*percentiles(samples), 10.0]


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
    out = LatencyResult(scales=scales, queries=n_queries)
    texts = queries(random.Random(3), 200)
    await emb.aprefill(texts)
    url = server.database("l_mem01session")
    # Timed in a process of its own, as the peers are (bench/ours_driver.py); its setup
    # migrates the database the rows are copied into.
    ours = Peer("mem01session", log)
    peers: dict[str, tuple[Peer, str]] = {}
    try:
        ours.call("setup", url=url, dim=emb.dim, model=emb.name)
        for name in ("mem0", "mem01-engine"):
            try:
                peer = Peer(name, log)
                purl = server.database("l_" + name.replace("-", "_"))
                peer.setup(purl, emb.dim, tempfile.mkdtemp(dir="/tmp"))
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
            rng = random.Random(scale)
            plan = [
                (f"user-{rng.randrange(users):05d}", rng.choice(texts))
                for _ in range(n_queries + warmup)
            ]
            out.table.setdefault(FLOOR, {})[scale] = tuple(_time_floor(url, emb, plan, warmup))  # type: ignore[assignment]
            out.table.setdefault("mem01session", {})[scale] = _timed_by(
                ours, emb, plan, warmup, max_tokens=800
            )
            for name, (peer, purl) in list(peers.items()):
                if scale > peer_max:
                    continue
                try:
                    started = time.perf_counter()
                    (_copy_mem0 if name == "mem0" else _copy_mem01_engine)(purl, emb, rows)
                    out.load_s.setdefault(name, {})[scale] = time.perf_counter() - started
                    out.table.setdefault(name, {})[scale] = _timed_by(peer, emb, plan, warmup, k=20)
                except (PeerError, OSError, psycopg.Error) as exc:
                    out.failures[name] = f"at {scale:,} beliefs: {exc}"
                    peers.pop(name)
                    peer.close()
            loaded = users * PER_USER
    finally:
        ours.close()
        for peer, _ in peers.values():
            peer.close()
    return out


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
