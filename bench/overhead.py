"""Per-run overhead as users feel it: Mem01Session against a bare SQLiteSession.

The real ``Runner`` with ``agents.testing.ScriptedModel`` (no network). The user replies
``think`` seconds after each answer. The extractor is the rule extractor behind a delay that
stands for an LLM call (0, 0.5 and 1.5 s), running in the background worker as in
production. Two cases: every turn in one conversation, and turns alternating between two
conversations of the same user (a turn of the other conversation is not in the model's
input: while it is queued, the run does not wait for its extraction, its block quotes the
user's words in it).

For each case the same texts go through bare ``SQLiteSession`` conversations and through
Mem01Session conversations, one after the other (the order alternates between cases), each
with its own fresh transcript; the added latency is the difference of the medians (p50) and
of the 95th percentiles.
"""

from __future__ import annotations

import asyncio
import gc
import statistics
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from agents import Agent, RunConfig, Runner, set_tracing_disabled
from agents.memory import Session, SQLiteSession
from agents.testing import ScriptedModel, assistant_message

from mem01session import Mem01Session, Memory
from mem01session.embeddings import Embedder

from .common import DelayedExtractor, Server, open_memory, scratch

DELAYS = (0.0, 0.5, 1.5)
THINK_SECONDS = 0.3
TEXTS = [
    "I live in Lisbon and I work as a teacher.",
    "Can you suggest a book for the weekend?",
    "My sister is called Ana.",
    "What should I cook tonight?",
    "I like hiking in the mountains.",
    "Where did I say I live?",
]


@dataclass
class Case:
    delay: float
    conversations: int
    bare_ms: list[float] = field(default_factory=list)
    mem_ms: list[float] = field(default_factory=list)
    quoting: int = 0  # Mem01Session runs whose block quoted turns still queued
    stale: int = 0  # Mem01Session runs whose block missed a queued turn (neither noted nor quoted)

    @staticmethod
    def _p(samples: list[float], q: int) -> float:
        return statistics.quantiles(samples, n=100)[q - 1] if len(samples) > 1 else samples[0]

    def p50(self, which: str) -> float:
        return float(statistics.median(getattr(self, f"{which}_ms")))

    def p95(self, which: str) -> float:
        return self._p(getattr(self, f"{which}_ms"), 95)


@dataclass
class OverheadResult:
    runs: int
    think: float
    cases: list[Case]
    seconds: float = 0.0
    embedder: str = ""
    gc_ms: float = 0.0  # one full garbage collection, at the end
    gc_objects: int = 0  # objects the collector tracked then


async def _one(session: Session, text: str, run_config: RunConfig | None) -> float:
    agent = Agent(name="a", model=ScriptedModel([[assistant_message("Noted.")]]))
    started = time.perf_counter()
    await Runner.run(agent, text, session=session, run_config=run_config)
    return (time.perf_counter() - started) * 1000.0


async def _talk(
    sessions: Sequence[Session], runs: int, think: float
) -> tuple[list[float], int, int]:
    """``runs`` turns, alternating between ``sessions``, each ``think`` s after the answer;
    their times, how many blocks quoted turns still queued, and how many were stale."""
    times: list[float] = []
    quoting = stale = 0
    for i in range(runs):
        session = sessions[i % len(sessions)]
        config = session.run_config() if isinstance(session, Mem01Session) else None
        await asyncio.sleep(think)
        times.append(await _one(session, TEXTS[i % len(TEXTS)], config))
        if isinstance(session, Mem01Session) and session.last_recall is not None:
            quoting += session.last_recall.pending_quoted > 0
            stale += session.last_recall.stale
    return times, quoting, stale


async def _case(
    memory: Memory, store: Path, case: Case, runs: int, think: float, mem_first: bool
) -> None:
    tag = uuid.uuid4().hex[:6]
    user = f"ovh-{tag}"
    bare = [SQLiteSession(f"bare-{tag}-{c}", store) for c in range(case.conversations)]
    mem = [
        Mem01Session(sid, user, inner=SQLiteSession(sid, store), memory=memory)
        for sid in (f"mem-{tag}-{c}" for c in range(case.conversations))
    ]
    for _ in range(2):  # warm-up, untimed: the first runs pay for imports and connections
        await _talk(bare, case.conversations, think)
        await _talk(mem, case.conversations, think)
    await mem[0].flush_memory(timeout=120)
    for first in ("mem", "bare") if mem_first else ("bare", "mem"):
        if first == "bare":
            case.bare_ms, _, _ = await _talk(bare, runs, think)
        else:
            case.mem_ms, case.quoting, case.stale = await _talk(mem, runs, think)
    await mem[0].flush_memory(timeout=120)  # untimed: no backlog leaks into the next case
    for s in mem:
        await s.aclose()


async def run(
    server: Server,
    embedder: Embedder,
    runs: int = 40,
    think: float = THINK_SECONDS,
    delays: Sequence[float] = DELAYS,
) -> OverheadResult:
    set_tracing_disabled(True)
    started = time.perf_counter()
    store = Path(scratch()) / "t.sqlite"
    result = OverheadResult(runs=runs, think=think, cases=[])
    result.embedder = embedder.name
    for i, delay in enumerate(delays):
        memory = await open_memory(
            server.database(f"o_mem01session_{i}"), embedder, extractor=DelayedExtractor(delay)
        )
        try:
            for conversations in (1, 2):
                case = Case(delay, conversations)
                mem_first = (i + conversations) % 2 == 0
                await _case(memory, store, case, runs, think, mem_first)
                result.cases.append(case)
        finally:
            await memory.aclose()
    result.seconds = time.perf_counter() - started
    result.gc_objects = len(gc.get_objects())
    collected = time.perf_counter()
    gc.collect()
    result.gc_ms = (time.perf_counter() - collected) * 1000.0
    return result


def table(r: OverheadResult) -> str:
    rows = [
        "| extractor delay | conversations | bare p50 ms | bare p95 ms | Mem01Session p50 ms "
        "| Mem01Session p95 ms | added p50 ms | added p95 ms | blocks quoting queued turns "
        "| stale blocks |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for c in r.cases:
        added95 = c.p95("mem") - c.p95("bare")
        mark = " (below zero: see the note)" if added95 < 0 else ""
        rows.append(
            f"| {c.delay:.1f} s | {_where(c)} | {c.p50('bare'):.1f} | {c.p95('bare'):.1f} "
            f"| {c.p50('mem'):.1f} | {c.p95('mem'):.1f} "
            f"| **{c.p50('mem') - c.p50('bare'):.1f}** | {added95:.1f}{mark} "
            f"| {c.quoting} | {c.stale} |"
        )
    return "\n".join(rows)


def _where(c: Case) -> str:
    return "one" if c.conversations == 1 else "two, alternating"


def below_zero(r: OverheadResult) -> str:
    """Why an added p95 came out negative, for each row where it did (empty if none).

    The added columns subtract the bare percentile from the Mem01Session one; a p95 of a
    few dozen runs is set by the slowest two or three, so one pause of the machine on the
    bare side (a garbage collection, another process) can outweigh the overhead. Said with
    the runs that did it, so that a negative figure never stands without its reason."""
    notes = []
    for c in r.cases:
        if c.p95("mem") - c.p95("bare") >= 0:
            continue
        slow_bare = ", ".join(f"{x:.1f}" for x in sorted(c.bare_ms)[-3:][::-1])
        slow_mem = ", ".join(f"{x:.1f}" for x in sorted(c.mem_ms)[-3:][::-1])
        notes.append(
            f"{c.delay:.1f} s, {_where(c)}: the bare side's slowest runs took {slow_bare} ms "
            f"(its median {c.p50('bare'):.1f} ms), Mem01Session's {slow_mem} ms"
        )
    if not notes:
        return ""
    return (
        "Added p95 below zero ("
        + "; ".join(notes)
        + f"): with {r.runs} runs a p95 is set by the slowest two or three, so a pause of "
        "the machine that lands on bare runs (a garbage collection, another process) "
        "outweighs what Mem01Session adds. A difference of percentiles is not a "
        "percentile of differences: Mem01Session makes no run faster, and the p50 column "
        "is the one to read."
    )
