"""Recall at scale (part of ``python -m bench load``): one user with 1,000 beliefs and one
with 10,000, sequential recalls idle and beside the busy processes, with the query's
embedding and the near-duplicate step timed inside the same recalls."""

from __future__ import annotations

import contextlib
import random
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

from mem01session.db import Database, migrate
from mem01session.embeddings import Embedder, Vector
from mem01session.engine import BeliefEngine, RecallRequest
from mem01session.engine import candidates as candidates_module
from mem01session.engine.near import Twin

from .busy import busy
from .common import PrecomputedEmbedder, Server
from .synthetic import copy_rows, queries, synthetic_rows

SCALES = (1000, 10000)


class TimedEmbedder:
    """The library's embedder, each call's wall time kept (ms)."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.samples: list[float] = []

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def dim(self) -> int:
        return self.inner.dim

    async def embed(self, texts: Sequence[str]) -> list[Vector]:
        started = time.perf_counter()
        try:
            return await self.inner.embed(texts)
        finally:
            self.samples.append((time.perf_counter() - started) * 1000.0)


@dataclass
class ScaleTimes:
    recall: list[float] = field(default_factory=list)
    embed: list[float] = field(default_factory=list)
    near: list[float] = field(default_factory=list)


@dataclass
class ScaleResult:
    scales: tuple[int, ...]
    calls: int
    warmup: int
    times: dict[tuple[int, bool], ScaleTimes] = field(default_factory=dict)  # (scale, loaded)


@contextlib.contextmanager
def _timing_near(into: list[float]) -> Iterator[None]:
    """Time the near-duplicate step of every recall (the engine's own function, wrapped)."""
    names = vars(candidates_module)  # where the recall looks the function up
    original: Callable[[Sequence[Twin]], dict[int, list[int]]] = names["near_duplicates"]

    def timed(twins: Sequence[Twin]) -> dict[int, list[int]]:
        started = time.perf_counter()
        try:
            return original(twins)
        finally:
            into.append((time.perf_counter() - started) * 1000.0)

    names["near_duplicates"] = timed
    try:
        yield
    finally:
        names["near_duplicates"] = original


async def _recalls(
    engine: BeliefEngine,
    timed: TimedEmbedder,
    user: str,
    texts: Sequence[str],
    warmup: int,
    into: ScaleTimes,
) -> None:
    near: list[float] = []
    with _timing_near(near):
        for i, query in enumerate(texts):
            timed.samples.clear()
            near.clear()
            started = time.perf_counter()
            await engine.recall(user, RecallRequest(query, max_tokens=800))
            elapsed = (time.perf_counter() - started) * 1000.0
            if i >= warmup:
                into.recall.append(elapsed)
                into.embed.extend(timed.samples)
                into.near.extend(near)


async def scale(
    server: Server,
    embedder: Embedder,
    calls: int,
    scales: Sequence[int] = SCALES,
    warmup: int = 20,
    rounds: int = 5,
) -> ScaleResult:
    """``calls`` timed recalls per scale and machine state (after ``warmup``), the scales
    alternating over ``rounds`` rounds, idle first, then beside the busy processes."""
    url = server.database("load_scale")
    loader = PrecomputedEmbedder(embedder)
    migrate.upgrade(url, embedding_dim=loader.dim, embedding_model=loader.name)
    users = {n: f"scale-{n}" for n in scales}
    rows = synthetic_rows([(u, n) for n, u in users.items()], seed=23)
    await loader.aprefill([row[1] for row in rows])  # in batches: embedding is not loading
    copy_rows(url, loader, rows)
    # Every timed query a different text, idle and loaded alike.
    need = 2 * len(scales) * (calls + warmup)
    texts = list(dict.fromkeys(queries(random.Random(29), 4 * need)))
    if len(texts) < need:
        raise RuntimeError(f"only {len(texts)} distinct queries for {need} recalls")
    out = ScaleResult(tuple(scales), calls, warmup)
    timed = TimedEmbedder(embedder)
    db = await Database.open(url=url, embedding_model=loader.name, embedding_dim=loader.dim)
    try:
        engine = BeliefEngine(db, timed)
        at = 0
        per_round = -(-calls // rounds)
        for loaded in (False, True):
            with busy() if loaded else contextlib.nullcontext():
                for r in range(rounds):
                    timed_now = min(per_round, calls - r * per_round)
                    if timed_now <= 0:
                        break
                    warm = warmup if r == 0 else 0
                    for n in scales if r % 2 == 0 else tuple(reversed(scales)):
                        times = out.times.setdefault((n, loaded), ScaleTimes())
                        chunk, at = texts[at : at + warm + timed_now], at + warm + timed_now
                        await _recalls(engine, timed, users[n], chunk, warm, times)
    finally:
        await db.close()
    return out
