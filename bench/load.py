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
reported apart. Beside the busy processes (start-up not frozen) it also runs with the
worker in the runs' process never giving way to them (``WorkerPolicy(yield_to_runs=0)``,
:mod:`mem01session.queue.foreground`): what giving way buys, and what it costs the blocks.

**Background load.** Two busy-looping processes started by the bench, each bounded in time
and ended by the bench when the loaded phase ends (:mod:`bench.busy`).

**Queue.** The backlog (jobs pending or running) is sampled every ``SAMPLE_SECONDS`` from
the first turn until it is empty (or ``DRAIN_LIMIT_SECONDS`` after the last turn); jobs
per second are the jobs done over that span. Afterwards every turn is checked: its words
stored as exactly one episode, its job done exactly once (lost and duplicated counts).

**Recall at scale** (:mod:`bench.load_scale`). One user with 1,000 beliefs and one with
10,000 (COPY'd, as the latency benchmark loads them); sequential ``BeliefEngine.recall``
calls (800 tokens) with the library's embedder, every query a different text (so no cache
of query vectors can help), idle and under the same background load, the scales
alternating. The query's embedding and the near-duplicate step are timed inside those same
recalls.

The report (tables, note, chart) is :mod:`bench.load_report`; the worker process beside
the runs and the CPU accounting, :mod:`bench.load_processes`.

**Rounds.** Every machine state runs ``rounds`` times, the states taking turns (idle,
busy, busy with the start-up frozen, then again): on a shared machine one run's tail
moves a lot between runs minutes apart, and the report shows each round's.

Flags (``python -m bench load``): ``--sessions 50 --users 10 --turns 10 --calls 200
--rounds 2`` are the defaults the report uses; ``--quick`` is a smoke run (6
conversations over 2 users, 2 turns, one round, 10 recalls at 100 and 300 beliefs) that
writes nothing into the docs.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import random
import subprocess
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
from agents import Agent, RunConfig, Runner, set_tracing_disabled
from agents.memory import Session, SQLiteSession
from agents.testing import ScriptedModel, assistant_message

from mem01session import Mem01Session, Memory
from mem01session.embeddings import Embedder, MiniLMEmbedder
from mem01session.queue import WorkerPolicy

from .busy import busy
from .common import Server, cpu_reference_ms, open_memory, scratch
from .load_floor import open_free_recall
from .load_processes import (
    helpers_cpu_s,
    server_cpu_s,
    server_pid,
    start_worker,
    stop_worker,
    tree_cpu_s,
)
from .load_scale import SCALES, ScaleResult, scale
from .synthetic import MODIFIERS, OBJECTS

THINK = (0.5, 1.5)  # seconds the user takes to reply, drawn uniformly per turn
SAMPLE_SECONDS = 0.25
DRAIN_LIMIT_SECONDS = 180.0
CITIES = ("Lisbon", "Porto", "Oslo", "Kyoto", "Lima", "Hanoi", "Montreal", "Nairobi")


@dataclass(frozen=True)
class Sizes:
    """How big a run is: the report's defaults, or :data:`QUICK`."""

    sessions: int = 50
    users: int = 10
    turns: int = 10
    calls: int = 200  # timed recalls per scale and machine state
    rounds: int = 2  # every machine state this many times, the states taking turns
    scales: tuple[int, ...] = SCALES


QUICK = Sizes(sessions=6, users=2, turns=2, calls=10, scales=(100, 300), rounds=1)


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
    frozen: bool = False  # gc.freeze() before the phase and once its memory is ready
    gives_way: bool = True  # False: WorkerPolicy(yield_to_runs=0), the worker never waits
    recall_free: bool = False  # every run's recall computes nothing (:mod:`.load_floor`)
    round: int = 1  # which time this machine state runs (Sizes.rounds)
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
    server_cpu_s: float | None = None  # the PostgreSQL server's, when it runs on this machine
    gave_way_s: float | None = None  # the worker's waits for the runs (.foreground), in-process


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
    policy = None if phase.gives_way else WorkerPolicy(yield_to_runs=0)
    if phase.recall_free:
        memory = await open_free_recall(url, embedder, run_worker=not phase.separate)
    else:
        memory = await open_memory(
            url, embedder, run_worker=not phase.separate, worker_policy=policy
        )
    engine = await memory.engine()
    await memory.ready()
    worker = start_worker(url, embedder) if phase.separate else None
    if phase.frozen:  # where the README has a server freeze: its memory opened and ready
        gc.collect()
        gc.freeze()
    try:
        span = await _converse(url, memory, worker, convs, phase)
        if not phase.separate:
            phase.gave_way_s = (await memory.worker()).gave_way_s
    finally:
        if worker is not None:
            stop_worker(worker)
    await memory.aclose()
    if phase.recall_free:  # its database was opened for it, not by the memory
        await engine.db.close()
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
    store = Path(scratch("mem01-load-")) / "t.sqlite"
    sessions = [
        Mem01Session(c.session_id, c.user_id, inner=SQLiteSession(c.session_id, store),
                     memory=memory, recall_wait=phase.recall_wait)
        for c in convs
    ]  # fmt: skip
    phase.jobs = sum(len(c.texts) for c in convs)
    stop = asyncio.Event()
    server = server_pid(url)  # None: the server runs on another machine
    cpu, started = time.process_time(), time.perf_counter()
    worker_pid = worker.pid if worker is not None else None
    helpers_cpu = helpers_cpu_s()
    server_cpu = server_cpu_s(server) if server is not None else 0.0
    worker_cpu = tree_cpu_s(worker_pid) if worker_pid is not None else 0.0  # not its start
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
    phase.helpers_cpu_s = helpers_cpu_s() - helpers_cpu
    if server is not None:
        phase.server_cpu_s = server_cpu_s(server) - server_cpu
    if worker_pid is not None:
        phase.worker_cpu_s = tree_cpu_s(worker_pid) - worker_cpu
    span = (phase.drained_s or time.perf_counter() - started) or 1.0
    for s in sessions:
        await s.aclose(flush_timeout=60)
    return span


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


# -- the whole benchmark -----------------------------------------------------------------


@dataclass
class LoadResult:
    sessions: int
    users: int
    turns: int
    phases: list[Phase]
    scale: ScaleResult | None
    rounds: int = 1
    seconds: float = 0.0
    cpu_ms: float = 0.0  # common.cpu_reference_ms() at the start, the machine idle
    cpu_ms_end: float = 0.0  # the same at the end (the busy processes ended)
    embedding_process: bool = False  # the model in a process of its own


async def _state(
    server: Server,
    embedder: Embedder,
    convs: Sequence[Conversation],
    loaded: bool,
    frozen: bool,
    round_: int,
) -> list[Phase]:
    """One machine state: bare, then Mem01Session with the worker in the runs' process
    (beside the busy processes, then also with that worker never giving way to the runs),
    then with the worker in its own."""
    here = Phase(loaded=loaded, frozen=frozen, round=round_)
    apart = Phase(loaded=loaded, separate=True, frozen=frozen, round=round_)
    rude = Phase(loaded=loaded, frozen=frozen, round=round_, gives_way=False)
    floor = Phase(loaded=loaded, separate=True, round=round_, recall_free=True)
    phases = [here, rude, apart, floor] if loaded and not frozen else [here, apart]
    with (
        busy() if loaded else contextlib.nullcontext(),
        startup_frozen() if frozen else contextlib.nullcontext(),
    ):
        bare = Path(scratch("mem01-load-")) / "bare.sqlite"
        await _bare(convs, bare, here.bare)
        state = ("busy" if loaded else "idle") + ("_frozen" if frozen else "")
        for phase in phases:
            phase.bare = here.bare  # one bare side per machine state, against each
            kind = "_apart" if phase.separate else "" if phase.gives_way else "_rude"
            kind += "_floor" if phase.recall_free else ""
            await _mem(server, embedder, convs, phase, f"load_{state}{kind}")
    return phases


async def run(server: Server, embedder: Embedder, sizes: Sizes = Sizes()) -> LoadResult:
    """The scenario idle, beside the busy processes, and beside them with the start-up
    frozen (bare, then Mem01Session, in each machine state), ``sizes.rounds`` times over,
    then recall at ``sizes.scales``."""
    set_tracing_disabled(True)
    started = time.perf_counter()
    cpu_ms = cpu_reference_ms()
    convs = plan(sizes.sessions, sizes.users, sizes.turns)
    await _warm(server, embedder, Path(scratch("mem01-load-")) / "warm.sqlite")
    phases: list[Phase] = []
    for round_ in range(1, sizes.rounds + 1):
        for loaded, frozen in MACHINE_STATES:
            phases += await _state(server, embedder, convs, loaded, frozen, round_)
    result = LoadResult(sizes.sessions, sizes.users, sizes.turns, phases, None, sizes.rounds)
    result.cpu_ms = cpu_ms
    result.embedding_process = isinstance(embedder, MiniLMEmbedder) and embedder.own_process
    result.scale = await scale(server, embedder, sizes.calls, sizes.scales)
    result.cpu_ms_end = cpu_reference_ms()
    result.seconds = time.perf_counter() - started
    return result
