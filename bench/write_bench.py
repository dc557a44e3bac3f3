"""Benchmark 5: write path throughput with 1, 4, 16 and 64 concurrent users.

ops/s: ``engine.apply`` batches of 5 ADD ops, each user its own sequence of batches, the
users concurrent (asyncio, one process, the engine's connection pool).
jobs/s: :data:`JOB_COUNT` turns spread over the users, enqueued as jobs (as
``Mem01Session.add_items`` does), then processed by one started ``MemoryWorker`` (its own
loop: up to its concurrency bound of users' turns at once, each user's in order; the turns
ready together written in one transaction) with the rule extractor until none is left, at
the bounds :data:`JOB_CONCURRENCY` (8, the default with a model; 64, the rule extractor's);
the median of :data:`REPEATS` runs. The turns' vectors are precomputed, as for every
system in these benchmarks; in an application the worker reuses the vector its run made of
the turn's text (the embedder keeps its recent texts').
With an LLM: the same, 64 users, the rule extractor behind a fixed delay standing for the
model call (:data:`LLM_DELAY`), at several ``WorkerPolicy.concurrency`` bounds
(:data:`CONCURRENCY`); the Python memory the worker holds at its peak beyond what it held
before (tracemalloc), per job in flight, is what the bound costs (an HTTP extractor's
buffers come on top).
"""

from __future__ import annotations

import asyncio
import gc
import random
import statistics
import time
import tracemalloc
from dataclasses import dataclass, field
from datetime import UTC, datetime

from mem01session.engine import BeliefEngine
from mem01session.engine.ops import Op, Provenance
from mem01session.extraction.rules.extractor import RuleExtractor
from mem01session.queue import JobStore
from mem01session.queue.turns import TurnMessage
from mem01session.queue.worker import MemoryWorker, WorkerPolicy

from .common import DelayedExtractor, PrecomputedEmbedder, Server, cpu_reference_ms, open_memory
from .synthetic import fact

USERS = (1, 4, 16, 64)
JOB_COUNT = 512  # jobs per measurement, spread over the users
JOB_CONCURRENCY = (8, 64)
REPEATS = 3  # runs per jobs/s figure (the median is reported): this VM is noisy
LLM_DELAY = 0.5  # seconds an extraction waits, standing for the model's answer
CONCURRENCY = (1, 8, 32)
LLM_USERS = 64
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
    # (users, concurrency bound) -> jobs / s (median), and turns per transaction (mean)
    jobs_per_s: dict[tuple[int, int], float] = field(default_factory=dict)
    per_tx: dict[tuple[int, int], float] = field(default_factory=dict)
    batches: int = 0
    jobs: int = 0
    cpu_ms: float = 0.0  # common.cpu_reference_ms() before the jobs/s runs
    # concurrency -> (jobs, jobs / s, peak Python memory per job in flight, KiB)
    llm: dict[int, tuple[int, float, float]] = field(default_factory=dict)


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


async def _enqueue(
    engine: BeliefEngine, emb: PrecomputedEmbedder, tag: str, users: int, per_user: int
) -> None:
    rng = random.Random(tag)
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
            await store.enqueue(f"{tag}-{u}", f"s{tag}-{u}-{t}", messages, now=now)
    emb.prefill(texts)
    engine.token_counter.count("loaded")  # the tokenizer's first load is not timed


async def _drain(engine: BeliefEngine, worker: MemoryWorker, total: int) -> float:
    """Start ``worker`` and wait until it processed ``total`` jobs; jobs per second."""
    started = time.perf_counter()
    worker.start()
    try:
        while worker.processed < total:
            before = worker.processed
            await worker.wait_progress(1.0)
            # Looked up only after a second without progress: a count per job processed
            # would cost the worker's process as much as a statement of the job.
            if worker.processed == before and not await _unfinished(engine):
                break  # none left: a job failed (reported below)
    finally:
        await worker.stop()
    if worker.last_error:
        raise RuntimeError(f"the worker failed a job: {worker.last_error}")
    return worker.processed / (time.perf_counter() - started)


async def _jobs(
    engine: BeliefEngine, emb: PrecomputedEmbedder, users: int, per_user: int, concurrency: int
) -> tuple[float, float]:
    """Jobs / s (median of :data:`REPEATS` runs) and turns per write transaction."""
    rates, per_tx = [], []
    for run_no in range(REPEATS):
        await _enqueue(engine, emb, f"j{users}-{concurrency}-{run_no}", users, per_user)
        worker = MemoryWorker(engine, RuleExtractor(), policy=WorkerPolicy(concurrency=concurrency))
        rates.append(await _drain(engine, worker, users * per_user))
        per_tx.append(worker.processed / max(1, worker.transactions))
    return statistics.median(rates), statistics.mean(per_tx)


async def _llm_jobs(
    engine: BeliefEngine, emb: PrecomputedEmbedder, concurrency: int
) -> tuple[int, float, float]:
    """Jobs, jobs / s and KiB per job in flight with the rule extractor behind
    :data:`LLM_DELAY` at ``concurrency``: enough jobs for 8 rounds of the bound, spread
    over :data:`LLM_USERS` users; then the memory, in a run of 2 rounds under tracemalloc
    (which slows Python down: not timed)."""
    per_user = -(-max(16, 8 * concurrency) // LLM_USERS)
    await _enqueue(engine, emb, f"llm{concurrency}", LLM_USERS, per_user)
    policy = WorkerPolicy(concurrency=concurrency)
    worker = MemoryWorker(engine, DelayedExtractor(LLM_DELAY), policy=policy)
    rate = await _drain(engine, worker, LLM_USERS * per_user)
    await _enqueue(engine, emb, f"llm-mem{concurrency}", 2 * concurrency, 1)
    worker = MemoryWorker(engine, DelayedExtractor(LLM_DELAY), policy=policy)
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        await _drain(engine, worker, 2 * concurrency)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return LLM_USERS * per_user, rate, (peak - before) / 1024 / concurrency


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
        out.cpu_ms = cpu_reference_ms()
        for users in USERS:
            per_user = per_user_jobs or JOB_COUNT // users
            out.jobs = users * per_user
            for bound in JOB_CONCURRENCY:
                rate, per_tx = await _jobs(engine, emb, users, per_user, bound)
                out.jobs_per_s[(users, bound)], out.per_tx[(users, bound)] = rate, per_tx
        for concurrency in CONCURRENCY:
            out.llm[concurrency] = await _llm_jobs(engine, emb, concurrency)
    finally:
        await memory.aclose()
    return out


def table(r: WriteResult) -> str:
    heads = "".join(
        f" jobs processed / s, bound {b} (turns per transaction) |" for b in JOB_CONCURRENCY
    )
    lines = [
        f"| concurrent users | ops applied / s |{heads}",
        "|---:|---:|" + "---:|" * len(JOB_CONCURRENCY),
    ]
    for users in USERS:
        cells = "".join(
            f" {r.jobs_per_s[(users, b)]:,.1f} ({r.per_tx[(users, b)]:.1f}) |"
            for b in JOB_CONCURRENCY
        )
        lines.append(f"| {users} | {r.ops_per_s[users]:,.0f} |{cells}")
    lines += [
        "",
        f"CPU reference of this run: {r.cpu_ms:.0f} ms (a fixed Python loop, best of 3; this "
        "shared VM's speed drifts between runs, and the figures with it).",
    ]
    if r.llm:
        lines += [
            "",
            f"| `WorkerPolicy.concurrency` | jobs | jobs / s with a {LLM_DELAY:g} s extractor "
            "| at most (concurrency / delay) | peak Python memory per job in flight KiB |",
            "|---:|---:|---:|---:|---:|",
        ]
        for c, (jobs, rate, kib) in r.llm.items():
            lines.append(f"| {c} | {jobs} | {rate:,.1f} | {c / LLM_DELAY:,.0f} | {kib:,.0f} |")
    return "\n".join(lines)
