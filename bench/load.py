"""``python -m bench load``: what memory adds to each run with many conversations at once,
on an idle machine and beside background CPU load.

**Runs.** ``sessions`` conversations over ``users`` users (each user has several
conversations going at once), concurrent on one event loop; each says ``turns`` turns
through the real ``Runner`` with ``ScriptedModel`` (no network), the user replying after a
think time drawn from ``THINK`` seconds (seeded). The rule extractor runs in the memory's
background worker, as in production; every recall embeds its query with the library's
embedder. The same scenario (same texts, same think times) runs first with bare
``SQLiteSession`` conversations, then with ``Mem01Session`` ones, each on fresh
transcripts and a fresh database: added = Mem01Session minus bare, per percentile.

**Where extraction runs.** Each machine state runs the Mem01Session side twice: with the
worker in the process of the runs (the default), and with ``Memory(run_worker=False)`` and
one ``mem01session worker`` process beside it (started before the runs, on the same
database, the same embedding model and the rule extractor); that process's CPU time is
reported apart.

**Background load.** Two busy-looping processes started by the bench, each bounded in time
(``HOG_LIMIT_SECONDS``) and ended by the bench when the loaded phase ends.

**Queue.** The backlog (jobs pending or running) is sampled every ``SAMPLE_SECONDS`` from
the first turn until it is empty (or ``DRAIN_LIMIT_SECONDS`` after the last turn); jobs
per second are the jobs done over that span. Afterwards every turn is checked: its words
stored as exactly one episode, its job done exactly once (lost and duplicated counts).

**Recall at scale.** One user with 1,000 beliefs and one with 10,000 (COPY'd, as the
latency benchmark loads them); sequential ``BeliefEngine.recall`` calls (800 tokens) with
the library's embedder, every query a different text (so no cache of query vectors can
help), idle and under the same background load, the scales alternating. The query's
embedding and the near-duplicate step are timed inside those same recalls.

Flags (``python -m bench load``): ``--sessions 50 --users 10 --turns 10 --calls 200`` are
the defaults the report uses; ``--quick`` is a smoke run (6 conversations over 2 users, 2
turns, 10 recalls at 100 and 300 beliefs) that writes nothing into the docs.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
import psycopg
from agents import Agent, RunConfig, Runner, set_tracing_disabled
from agents.memory import Session, SQLiteSession
from agents.testing import ScriptedModel, assistant_message

from mem01session import Mem01Session, Memory
from mem01session.db import Database, migrate
from mem01session.embeddings import Embedder, MiniLMEmbedder, Vector
from mem01session.engine import BeliefEngine, RecallRequest
from mem01session.engine import candidates as candidates_module
from mem01session.engine.near import Twin

from .common import (
    PrecomputedEmbedder,
    Server,
    cpu_reference_ms,
    nproc,
    open_memory,
    percentiles,
)
from .synthetic import MODIFIERS, OBJECTS, copy_rows, queries, synthetic_rows

THINK = (0.5, 1.5)  # seconds the user takes to reply, drawn uniformly per turn
SAMPLE_SECONDS = 0.25
DRAIN_LIMIT_SECONDS = 180.0
HOGS = 2
EMBEDDING_PROCESS = "mem01session.embeddings.model_child"
HOG_LIMIT_SECONDS = 900.0  # a busy process ends by itself after this, whatever happens
SCALES = (1000, 10000)
CITIES = ("Lisbon", "Porto", "Oslo", "Kyoto", "Lima", "Hanoi", "Montreal", "Nairobi")

HOG = "import sys, time\nend = time.monotonic() + float(sys.argv[1])\nwhile time.monotonic() < end:\n    pass\n"  # noqa: E501


@dataclass(frozen=True)
class Sizes:
    """How big a run is: the report's defaults, or :data:`QUICK`."""

    sessions: int = 50
    users: int = 10
    turns: int = 10
    calls: int = 200  # timed recalls per scale and machine state
    scales: tuple[int, ...] = SCALES


QUICK = Sizes(sessions=6, users=2, turns=2, calls=10, scales=(100, 300))


@dataclass(frozen=True)
class Conversation:
    session_id: str
    user_id: str
    texts: tuple[str, ...]
    thinks: tuple[float, ...]


def plan(sessions: int, users: int, turns: int, seed: int = 17) -> list[Conversation]:
    """Who says what, when: every turn's text is different (so that each can be found
    among the stored episodes exactly once)."""
    rng = random.Random(seed)
    out: list[Conversation] = []
    for c in range(sessions):
        texts: list[str] = []
        for t in range(turns):
            tag = f"(chat {c}, turn {t})"
            kind = rng.randrange(4)
            obj, mod = rng.choice(OBJECTS), rng.choice(MODIFIERS)
            if kind == 0:
                texts.append(f"I live in {rng.choice(CITIES)} now {tag}.")
            elif kind == 1:
                texts.append(f"I like {obj} {mod} {tag}.")
            elif kind == 2:
                texts.append(f"What do you remember about {obj} {tag}?")
            else:
                texts.append(f"Any ideas for {obj} {mod} {tag}?")
        thinks = tuple(rng.uniform(*THINK) for _ in range(turns))
        out.append(Conversation(f"chat-{c}", f"user-{c % users}", tuple(texts), thinks))
    return out


# -- one phase: the scenario, bare and with memory -----------------------------------------


@dataclass
class Runs:
    """One side of a phase: every run's wall time (ms), and for memory what its recall did."""

    ms: list[float] = field(default_factory=list)
    waited_ms: list[float] = field(default_factory=list)
    stale: int = 0
    quoting: int = 0  # blocks that quote the words of the user's turns still queued
    without_memory: int = 0  # runs whose recall failed (the model got no block)
    errors: list[str] = field(default_factory=list)
    cpu_s: float = 0.0  # this process's CPU time (every thread) over the side's runs
    wall_s: float = 0.0  # from the first turn to the last answer
    full_gcs: list[float] = field(default_factory=list)  # ms each full collection took


@contextlib.contextmanager
def full_collections(into: list[float]) -> Iterator[None]:
    """Time every full (generation 2) garbage collection of this process meanwhile: each
    stops every conversation of the event loop while it runs."""
    started: list[float] = []

    def timed(phase: str, info: dict[str, int]) -> None:
        if info["generation"] != 2:
            return
        if phase == "start":
            started.append(time.perf_counter())
        elif started:
            into.append((time.perf_counter() - started.pop()) * 1000.0)

    gc.callbacks.append(timed)
    try:
        yield
    finally:
        gc.callbacks.remove(timed)


@dataclass
class Phase:
    """The scenario under one load condition."""

    loaded: bool
    separate: bool = False  # the worker in a process of its own (mem01session worker)
    frozen: bool = False  # gc.freeze() before the phase, as a server may after start-up
    bare: Runs = field(default_factory=Runs)
    mem: Runs = field(default_factory=Runs)
    backlog: list[tuple[float, int]] = field(default_factory=list)  # (s since start, jobs)
    turns_end_s: float = 0.0
    done_at_turns_end: int | None = None  # jobs done when the last turn was answered
    backlog_at_turns_end: int | None = None
    jobs: int = 0
    drained_s: float | None = None
    jobs_per_s: float = 0.0
    done_jobs: int = 0
    lost: int = 0
    duplicated: int = 0
    failed_jobs: int = 0
    recall_wait: float = 2.0
    worker_cpu_s: float | None = None  # the worker process's (and its helpers'), when separate
    helpers_cpu_s: float = 0.0  # the runs' process's helper processes (its embedding process)


async def _talk(
    conv: Conversation, session: Session, runs: Runs, config: Callable[[], RunConfig | None]
) -> None:
    for text, think in zip(conv.texts, conv.thinks, strict=True):
        await asyncio.sleep(think)
        agent = Agent(name="a", model=ScriptedModel([[assistant_message("Noted.")]]))
        before = session.last_recall if isinstance(session, Mem01Session) else None
        started = time.perf_counter()
        await Runner.run(agent, text, session=session, run_config=config())
        runs.ms.append((time.perf_counter() - started) * 1000.0)
        if isinstance(session, Mem01Session):
            # A recall that failed leaves the previous run's result in last_recall.
            recall = session.last_recall
            if recall is None or recall is before:
                runs.without_memory += 1
                runs.errors.append(session.last_memory_error or "no recall")
            else:
                runs.waited_ms.append(recall.waited_ms)
                runs.stale += recall.stale
                runs.quoting += recall.pending_quoted > 0


async def _sample(url: str, phase: Phase, started: float, stop: asyncio.Event) -> None:
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        while True:
            cur = await conn.execute(
                "SELECT count(*) FILTER (WHERE status IN ('pending', 'running')), "
                "count(*) FILTER (WHERE status = 'done'), count(*) FROM memory_jobs"
            )
            row = await cur.fetchone()
            assert row is not None
            now = time.perf_counter() - started
            phase.backlog.append((round(now, 2), int(row[0])))
            if phase.turns_end_s and phase.done_at_turns_end is None:
                phase.done_at_turns_end, phase.backlog_at_turns_end = int(row[1]), int(row[0])
            if phase.turns_end_s and row[0] == 0 and row[2] >= phase.jobs:
                phase.drained_s = now
                return
            if stop.is_set():
                return
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), SAMPLE_SECONDS)


async def _check(url: str, convs: Sequence[Conversation], phase: Phase) -> None:
    """Every turn's words stored as one episode, every job done once."""
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        cur = await conn.execute(
            "SELECT user_id, content, count(*) FROM episodes WHERE role = 'user' "
            "GROUP BY user_id, content"
        )
        stored = {(str(u), str(c)): int(n) for u, c, n in await cur.fetchall()}
        cur = await conn.execute("SELECT status, count(*) FROM memory_jobs GROUP BY status")
        statuses = {str(s): int(n) for s, n in await cur.fetchall()}
    expected = [(c.user_id, text) for c in convs for text in c.texts]
    phase.lost = sum(1 for key in expected if key not in stored)
    phase.duplicated = sum(stored.get(key, 0) - 1 for key in expected if stored.get(key, 0) > 1)
    phase.duplicated += max(0, statuses.get("done", 0) - len(expected))
    phase.failed_jobs = statuses.get("failed", 0)
    phase.done_jobs = statuses.get("done", 0)


async def _bare(convs: Sequence[Conversation], store: Path, runs: Runs) -> None:
    sessions = [SQLiteSession(f"bare-{c.session_id}", store) for c in convs]
    cpu, started = time.process_time(), time.perf_counter()
    with full_collections(runs.full_gcs):
        await asyncio.gather(
            *(_talk(c, s, runs, lambda: None) for c, s in zip(convs, sessions, strict=True))
        )
    runs.cpu_s, runs.wall_s = time.process_time() - cpu, time.perf_counter() - started
    for s in sessions:
        s.close()


async def _mem(
    server: Server, embedder: Embedder, convs: Sequence[Conversation], phase: Phase, name: str
) -> None:
    url = server.database(name)
    # Each phase says the same texts: without this, the vectors the embedder kept of the
    # previous phase's would spare this one's queries the model (users say new things).
    forget = getattr(embedder, "forget_texts", None)
    if callable(forget):
        forget()
    memory = await open_memory(url, embedder, run_worker=not phase.separate)
    await memory.ready()
    worker = _start_worker(url, embedder) if phase.separate else None
    try:
        span = await _converse(url, memory, worker, convs, phase)
    finally:
        if worker is not None:
            _stop_worker(worker)
    await memory.aclose()
    await _check(url, convs, phase)
    phase.jobs_per_s = phase.done_jobs / span


async def _converse(
    url: str,
    memory: Memory,
    worker: subprocess.Popen[str] | None,
    convs: Sequence[Conversation],
    phase: Phase,
) -> float:
    """The conversations with memory, until the backlog is drained; the seconds that took."""
    store = Path(tempfile.mkdtemp(prefix="mem01-load-")) / "t.sqlite"
    sessions = [
        Mem01Session(c.session_id, c.user_id, inner=SQLiteSession(c.session_id, store),
                     memory=memory, recall_wait=phase.recall_wait)
        for c in convs
    ]  # fmt: skip
    phase.jobs = sum(len(c.texts) for c in convs)
    stop = asyncio.Event()
    cpu, started = time.process_time(), time.perf_counter()
    worker_pid = worker.pid if worker is not None else None
    helpers_cpu = _helpers_cpu_s()
    worker_cpu = _tree_cpu_s(worker_pid) if worker_pid is not None else 0.0  # not its start
    sampler = asyncio.create_task(_sample(url, phase, started, stop))
    try:
        with full_collections(phase.mem.full_gcs):
            await asyncio.gather(
                *(
                    _talk(c, s, phase.mem, s.run_config)
                    for c, s in zip(convs, sessions, strict=True)
                )
            )
        phase.turns_end_s = phase.mem.wall_s = time.perf_counter() - started
        # The backlog drains by itself (the worker runs on): wait for that, bounded.
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(sampler), DRAIN_LIMIT_SECONDS)
    finally:
        stop.set()
        await sampler
    phase.mem.cpu_s = time.process_time() - cpu  # the backlog's extraction included
    phase.helpers_cpu_s = _helpers_cpu_s() - helpers_cpu
    if worker_pid is not None:
        phase.worker_cpu_s = _tree_cpu_s(worker_pid) - worker_cpu
    span = (phase.drained_s or time.perf_counter() - started) or 1.0
    for s in sessions:
        await s.aclose(flush_timeout=60)
    return span


def _start_worker(url: str, embedder: Embedder) -> subprocess.Popen[str]:
    """``mem01session worker`` on ``url``, extracting with the rule extractor and
    embedding with ``embedder``'s model, once it says it runs."""
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "DATABASE_URL")}
    env.update(
        MEM01_DATABASE_URL=url,
        MEM01_EMBEDDING_MODEL=embedder.name,
        MEM01_HOME=tempfile.mkdtemp(prefix="mem01-load-worker-"),
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "mem01session", "worker"],
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line.startswith("worker "):
        proc.kill()
        raise RuntimeError(f"mem01session worker did not start: {line!r}")
    return proc


def _tree_cpu_s(pid: int) -> float:
    """CPU seconds of process ``pid`` and of the processes it started (alive now)."""
    try:
        root = psutil.Process(pid)
        tree = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return 0.0
    total = 0.0
    for proc in tree:
        with contextlib.suppress(psutil.NoSuchProcess):
            times = proc.cpu_times()
            total += times.user + times.system
    return total


def _helpers_cpu_s() -> float:
    """CPU seconds of this process's embedding process (the busy processes and the worker
    process are children too, and not counted)."""
    total = 0.0
    for child in psutil.Process().children():
        with contextlib.suppress(psutil.NoSuchProcess):
            if EMBEDDING_PROCESS in child.cmdline():
                total += _tree_cpu_s(child.pid)
    return total


def _stop_worker(proc: subprocess.Popen[str]) -> None:
    """Stop the worker process (SIGTERM: it hands back what it holds)."""
    proc.terminate()
    try:
        proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()


async def _warm(server: Server, embedder: Embedder, store: Path) -> None:
    """Imports, the embedding model, first connections: paid here, untimed."""
    convs = plan(4, 2, 2, seed=3)
    await _bare(convs, store, Runs())
    await _mem(server, embedder, convs, Phase(loaded=False), "load_warm")


# -- background load ---------------------------------------------------------------------

# (busy processes running, start-up frozen) for each machine state, in this order
MACHINE_STATES = ((False, False), (True, False), (True, True))


@contextlib.contextmanager
def startup_frozen() -> Iterator[None]:
    """What the process holds now left out of garbage collections meanwhile."""
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


@contextlib.contextmanager
def busy(processes: int = HOGS, limit: float = HOG_LIMIT_SECONDS) -> Iterator[None]:
    """``processes`` busy loops, each ending by itself after ``limit`` seconds at most and
    ended (by its own pid) when the block ends."""
    hogs = [subprocess.Popen([sys.executable, "-c", HOG, str(limit)]) for _ in range(processes)]
    try:
        time.sleep(0.5)  # they are spinning before anything is timed
        yield
    finally:
        for hog in hogs:
            hog.kill()
        for hog in hogs:
            hog.wait(30)


# -- recall at scale ---------------------------------------------------------------------


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


# -- the whole benchmark -----------------------------------------------------------------


@dataclass
class LoadResult:
    sessions: int
    users: int
    turns: int
    phases: list[Phase]
    scale: ScaleResult | None
    seconds: float = 0.0
    cpu_ms: float = 0.0  # common.cpu_reference_ms() at the start, the machine idle
    embedding_process: bool = False  # the model in a process of its own


async def run(server: Server, embedder: Embedder, sizes: Sizes = Sizes()) -> LoadResult:
    """The scenario idle, beside the busy processes, and beside them with the start-up
    frozen (bare, then Mem01Session, in each machine state), then recall at
    ``sizes.scales``."""
    set_tracing_disabled(True)
    started = time.perf_counter()
    cpu_ms = cpu_reference_ms()
    convs = plan(sizes.sessions, sizes.users, sizes.turns)
    await _warm(server, embedder, Path(tempfile.mkdtemp(prefix="mem01-load-")) / "warm.sqlite")
    phases: list[Phase] = []
    for loaded, frozen in MACHINE_STATES:
        here = Phase(loaded=loaded, frozen=frozen)
        apart = Phase(loaded=loaded, separate=True, frozen=frozen)
        with (
            busy() if loaded else contextlib.nullcontext(),
            startup_frozen() if frozen else contextlib.nullcontext(),
        ):
            bare = Path(tempfile.mkdtemp(prefix="mem01-load-")) / "bare.sqlite"
            await _bare(convs, bare, here.bare)
            apart.bare = here.bare  # one bare side per machine state, against both
            state = ("busy" if loaded else "idle") + ("_frozen" if frozen else "")
            await _mem(server, embedder, convs, here, f"load_{state}")
            await _mem(server, embedder, convs, apart, f"load_{state}_apart")
        phases += [here, apart]
    result = LoadResult(sizes.sessions, sizes.users, sizes.turns, phases, None)
    result.cpu_ms = cpu_ms
    result.embedding_process = isinstance(embedder, MiniLMEmbedder) and embedder.own_process
    result.scale = await scale(server, embedder, sizes.calls, sizes.scales)
    result.seconds = time.perf_counter() - started
    return result


def _where(loaded: bool) -> str:
    return f"{HOGS} busy processes" if loaded else "idle"


def _worker(p: Phase) -> str:
    return "own process" if p.separate else "in the runs' process"


def _machine(p: Phase) -> str:
    return _where(p.loaded) + (", start-up frozen" if p.frozen else "")


def _name(p: Phase) -> str:
    return f"{_machine(p)}, worker {_worker(p)}"


def _ms(values: Sequence[float], digits: int = 1) -> str:
    return " / ".join(f"{v:.{digits}f}" for v in values)


def table(r: LoadResult) -> str:
    rows = [
        "| machine | worker | runs | bare p50 / p95 / p99 ms | Mem01Session p50 / p95 / p99 ms "
        "| added p50 / p95 / p99 ms | runs that waited | longest wait ms "
        "| waits of a full `recall_wait` | blocks quoting queued turns | stale blocks "
        "| runs without memory "
        "| turns / s | CPU ms / turn: bare; Mem01Session + embedding process (+ worker process) "
        "| full GCs (longest ms): bare, Mem01Session |",
        "|---|---|---:|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|---|",
    ]
    for p in r.phases:
        bare, mem = percentiles(p.bare.ms), percentiles(p.mem.ms)
        added = tuple(m - b for m, b in zip(mem, bare, strict=True))
        waits = [w for w in p.mem.waited_ms if w > 0]
        full = sum(1 for w in waits if w >= p.recall_wait * 1000 * 0.95)
        apart = "" if p.worker_cpu_s is None else f" (+ {_cpu_ms(p.mem, p.worker_cpu_s):.1f})"
        rows.append(
            f"| {_machine(p)} | {_worker(p)} | {len(p.mem.ms)} | {_ms(bare)} | {_ms(mem)} "
            f"| **{_ms(added)}** | {len(waits)} | {max(waits, default=0.0):.0f} | {full} "
            f"| {p.mem.quoting} | {p.mem.stale} | {p.mem.without_memory} | {_rate(p.mem):.1f} "
            f"| {_cpu_ms(p.bare):.1f}; {_cpu_ms(p.mem):.1f} + "
            f"{_cpu_ms(p.mem, p.helpers_cpu_s):.1f}{apart} "
            f"| {_gcs(p.bare)}, {_gcs(p.mem)} |"
        )
    rows += [
        "",
        "| machine | worker | jobs | done when the turns ended | backlog then | largest backlog "
        "| drained after s | jobs / s | lost | duplicated | failed |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for p in r.phases:
        drained = f"{p.drained_s:.1f}" if p.drained_s is not None else "not drained"
        rows.append(
            f"| {_machine(p)} | {_worker(p)} | {p.jobs} | {_count(p.done_at_turns_end)} "
            f"| {_count(p.backlog_at_turns_end)} | {max((n for _, n in p.backlog), default=0)} "
            f"| {drained} | {p.jobs_per_s:.1f} | {p.lost} | {p.duplicated} | {p.failed_jobs} |"
        )
    if r.scale is not None:
        rows += [
            "",
            "| beliefs of the user | machine | recall p50 / p95 / p99 ms | p95 against idle "
            "| query embedding p50 / p95 ms | near-duplicate step p50 / p95 ms |",
            "|---:|---|---|---:|---|---|",
        ]
        for n in r.scale.scales:
            idle_p95 = percentiles(r.scale.times[(n, False)].recall)[1]
            for loaded in (False, True):
                t = r.scale.times[(n, loaded)]
                recall = percentiles(t.recall)
                rows.append(
                    f"| {n:,} | {_where(loaded)} | {_ms(recall)} | {recall[1] / idle_p95:.2f}x "
                    f"| {_ms(percentiles(t.embed)[:2])} | {_ms(percentiles(t.near)[:2], 2)} |"
                )
    return "\n".join(rows)


def _gcs(runs: Runs) -> str:
    return f"{len(runs.full_gcs)} ({max(runs.full_gcs, default=0.0):.0f})"


def _rate(runs: Runs) -> float:
    """Turns answered per second over the side's runs."""
    return len(runs.ms) / runs.wall_s if runs.wall_s else 0.0


def _cpu_ms(runs: Runs, cpu_s: float | None = None) -> float:
    """This process's CPU time per turn (ms), or ``cpu_s``'s over the same turns."""
    spent = runs.cpu_s if cpu_s is None else cpu_s
    return spent * 1000.0 / len(runs.ms) if runs.ms else 0.0


def capacity(r: LoadResult) -> str:
    """What the CPU figures say of this machine's capacity (generated from them)."""
    idle = next((p for p in r.phases if not p.loaded and not p.separate), None)
    if idle is None or not idle.mem.ms:
        return ""
    per_turn = _cpu_ms(idle.mem)
    memory = per_turn - _cpu_ms(idle.bare)
    return (
        f"Capacity: idle, one turn cost this process {per_turn:.1f} ms of CPU with memory "
        f"({memory:.1f} ms more than bare: the recall, the enqueue and the turn's extraction "
        "in the background worker"
        + ("; the model's time is the embedding process's" if r.embedding_process else "")
        + "), so one process can take at most "
        f"{1000.0 / per_turn:.0f} turns / s if it had a whole core to itself (Python runs one "
        f"thread at a time); the scenario offered about {_rate(idle.bare):.0f} turns / s "
        "(bare). Past that the runs queue for the CPU, and the added latency is that queue, "
        "not a wait for memory (see 'runs that waited')."
    )


def _model_where(r: LoadResult) -> str:
    if r.embedding_process:
        return (
            "which runs the model in a process of its own (the default; "
            "`MEM01_EMBEDDING_PROCESS=0` runs it in the runs' process)"
        )
    return "which runs the model in the runs' process (`MEM01_EMBEDDING_PROCESS=0`)"


def _count(value: int | None) -> str:
    return "?" if value is None else str(value)


def note(r: LoadResult) -> str:
    scale = r.scale
    recall_wait = r.phases[0].recall_wait if r.phases else 0.0
    at_scale = (
        f"{scale.calls} timed recalls (800 tokens) per scale and machine state, after "
        f"{scale.warmup} untimed, the scales alternating; every query a different text, so "
        "that no vector kept of a recent text can serve it; the query's embedding and the "
        "near-duplicate step are timed inside those same recalls. "
        if scale is not None
        else ""
    )
    errors = sorted({e for p in r.phases for e in p.mem.errors})
    return (
        f"{r.sessions} conversations over {r.users} users (up to "
        f"{-(-r.sessions // r.users)} at once per user), {r.turns} turns each, concurrent on "
        f"one event loop; the user replies {THINK[0]:g}-{THINK[1]:g} s after each answer "
        "(seeded). The same texts and think times through bare `SQLiteSession` "
        "conversations first, then through Mem01Session ones (fresh transcripts, a fresh "
        "database per machine state); added = Mem01Session minus bare, per percentile. "
        "Rule extractor; every recall embeds its query with the library's embedder (in the "
        f"figures), {_model_where(r)}; the vectors it keeps of recent texts are dropped "
        "before each row's runs (each row says the same texts, and a user says new ones). "
        "Worker 'in the runs' process': the memory's "
        "background worker, as by default; 'own process': `Memory(run_worker=False)` in "
        "the runs' process and one "
        "`mem01session worker` process beside it (same database, embedding model and "
        "extractor), whose CPU time over the same span (its embedding process's included) "
        "is the '(+ ...)' figure. "
        f"Busy: {HOGS} processes spinning in a "
        f"loop on this {nproc()}-core machine, started by the benchmark before the bare runs "
        f"and ended after the Mem01Session runs (each ends by itself after "
        f"{HOG_LIMIT_SECONDS:.0f} s whatever happens). 'Runs that waited': recalls that "
        "waited for turns of the user's other conversations (`RecallResult.waited_ms`; a "
        "run waits for none: their words close its block instead); 'waits of a full "
        f"`recall_wait`': at least 95% of it ({recall_wait:g} s); blocks quoting queued "
        "turns: blocks that close with the words of the user's turns still queued elsewhere "
        "(`RecallResult.pending_quoted`); stale blocks: turns of the user still queued that "
        "the block neither reflects nor quotes, counted in its header. Backlog: jobs "
        f"pending or running, sampled every {SAMPLE_SECONDS:g} s from the first turn until "
        f"none is left (at most {DRAIN_LIMIT_SECONDS:.0f} s after the last turn); jobs / s "
        "over that span. Lost and duplicated: each turn's words must be stored as exactly "
        "one episode, and no more jobs done than turns. Turns / s: answered per second while "
        "the conversations ran. CPU: the runs' process's CPU time, all threads, over "
        "each side's runs (with memory: until the backlog was drained), per turn, then its "
        "embedding process's over the same span (the model's time on the queries and on the "
        "worker's texts); the PostgreSQL server's is not counted. Full GCs: the runs' "
        "process's full garbage collections while the conversations ran, and the longest "
        "(each stops every conversation of the process while it runs). 'Start-up frozen': "
        "the same busy machine, `gc.collect()` then `gc.freeze()` called before the "
        "state's runs (both sides alike), as the README suggests a server do once its "
        "start-up is done: what the process held then is left out of later collections "
        "(`gc.unfreeze()` after). "
        + capacity(r)
        + " Recall at scale: one user's synthetic beliefs COPY'd as in the latency "
        "benchmark; " + at_scale + "Memory "
        f"errors: {'; '.join(errors) or 'none'}. Took {r.seconds:.0f} s. CPU reference of "
        f"this run: {r.cpu_ms:.0f} ms (a fixed Python loop, best of 3, idle; this shared "
        "VM's speed drifts between runs, and the figures with it)."
        "\n\n![backlog over time](img/bench-load.png)"
    )


def chart_data(r: LoadResult) -> dict[str, Any]:
    return {
        "title": f"Extraction backlog under {r.sessions} concurrent conversations",
        "phases": {
            _name(p): {"backlog": p.backlog, "turns_end_s": p.turns_end_s} for p in r.phases
        },
    }
