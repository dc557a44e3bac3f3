"""Benchmark 4: per-run overhead of Mem01Session over a bare SQLiteSession.

The real ``Runner`` with ``agents.testing.ScriptedModel`` (no network); Mem01Session
recalls before the model call and records the turn for extraction after it (the rule
extractor runs in the background worker, as in production). Median of many runs.
"""

from __future__ import annotations

import statistics
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from agents import Agent, Runner, set_tracing_disabled
from agents.memory import Session, SQLiteSession
from agents.testing import ScriptedModel, assistant_message

from mem01session.extraction.rules import RuleExtractor
from mem01session.session import Mem01Session
from mem01session.worker import stop_workers

from .common import PrecomputedEmbedder, Server, open_engine

TEXTS = [
    "I live in Lisbon and I work as a teacher.",
    "Can you suggest a book for the weekend?",
    "My sister is called Ana.",
    "What should I cook tonight?",
]


@dataclass
class OverheadResult:
    runs: int
    bare_ms: float
    mem_ms: float
    bare_p95: float
    mem_p95: float
    settled_ms: float = 0.0
    settled_p95: float = 0.0

    @property
    def overhead_ms(self) -> float:
        return self.mem_ms - self.bare_ms


async def _time(
    session: Session, runs: int, run_config: object = None, settle: bool = False
) -> list[float]:
    """Wall time of each run; ``settle`` drains the memory worker (untimed) after each."""
    samples = []
    for i in range(runs):
        agent = Agent(name="a", model=ScriptedModel([[assistant_message("Noted.")]]))
        started = time.perf_counter()
        await Runner.run(agent, TEXTS[i % len(TEXTS)], session=session, run_config=run_config)  # type: ignore[arg-type]
        samples.append((time.perf_counter() - started) * 1000.0)
        if settle and isinstance(session, Mem01Session):
            await session.flush_memory(timeout=60)
    return samples


async def run(server: Server, emb: PrecomputedEmbedder, runs: int = 300) -> OverheadResult:
    set_tracing_disabled(True)
    engine = await open_engine(server.database("o_mem01session"), emb)
    store = Path(tempfile.mkdtemp(dir="/tmp")) / "t.sqlite"
    user = f"ovh-{uuid.uuid4().hex[:6]}"
    try:
        # One transcript per kind, each given the same runs: the SDK's own cost grows with
        # the history, so unequal transcripts would be measured as memory overhead.
        bare = SQLiteSession("bare", store)
        back_to_back = Mem01Session(
            "mem", user, inner=SQLiteSession("mem", store), engine=engine, extractor=RuleExtractor()
        )
        drained = Mem01Session(
            "mem-drained",
            user + "-drained",  # its own user: the back-to-back backlog never delays it
            inner=SQLiteSession("mem-drained", store),
            engine=engine,
            extractor=RuleExtractor(),
        )
        await _time(bare, 20)  # warm-up, all three
        await _time(back_to_back, 20, back_to_back.run_config())
        await _time(drained, 20, drained.run_config(), settle=True)
        bare_ms: list[float] = []
        mem_ms: list[float] = []
        settled: list[float] = []
        for _ in range(runs // 50):  # interleave blocks so drift hits all alike
            bare_ms += await _time(bare, 50)
            mem_ms += await _time(back_to_back, 50, back_to_back.run_config())
            await back_to_back.flush_memory(timeout=60)  # untimed: no backlog leaks over
            settled += await _time(drained, 50, drained.run_config(), settle=True)
        await back_to_back.flush_memory(timeout=60)
    finally:
        await stop_workers(engine)
        await engine.close()
    q = statistics.quantiles
    return OverheadResult(
        runs=len(bare_ms),
        bare_ms=statistics.median(bare_ms),
        mem_ms=statistics.median(mem_ms),
        bare_p95=q(bare_ms, n=20)[18],
        mem_p95=q(mem_ms, n=20)[18],
        settled_ms=statistics.median(settled),
        settled_p95=q(settled, n=20)[18],
    )


def table(r: OverheadResult) -> str:
    return "\n".join(
        [
            "| session | median ms per run | p95 ms |",
            "|---|---:|---:|",
            f"| SQLiteSession (bare) | {r.bare_ms:.2f} | {r.bare_p95:.2f} |",
            f"| Mem01Session, back-to-back runs | {r.mem_ms:.2f} | {r.mem_p95:.2f} |",
            f"| Mem01Session, worker drained between runs | {r.settled_ms:.2f} "
            f"| {r.settled_p95:.2f} |",
            f"| **overhead, back-to-back (median difference)** | **{r.overhead_ms:.2f}** | |",
            f"| **overhead, drained** | **{r.settled_ms - r.bare_ms:.2f}** | |",
        ]
    )
