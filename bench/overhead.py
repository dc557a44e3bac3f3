"""Benchmark 4: per-run overhead of Mem01Session over a bare SQLiteSession.

The real ``Runner`` with ``agents.testing.ScriptedModel`` (no network); Mem01Session
recalls before the model call and records the turn for extraction after it (the rule
extractor runs in the background worker, as in production). Median of many runs.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from agents import Agent, Runner, set_tracing_disabled
from agents.memory import Session, SQLiteSession
from agents.testing import ScriptedModel, assistant_message

from mem01session.session import Mem01Session

from .common import PrecomputedEmbedder, Server, open_memory

THINK_SECONDS = 0.02  # idle time before each drained-mode run: the user reading and typing
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
    bare_p95: float
    drained_ms: float
    drained_p95: float
    paired_ms: float  # median of (drained run - the bare run just before it)
    back_to_back_ms: float
    back_to_back_p95: float
    trials: list[float]  # the paired median of each trial, in order

    @property
    def back_to_back_overhead_ms(self) -> float:
        return self.back_to_back_ms - self.bare_ms


async def _one(session: Session, text: str, run_config: object = None) -> float:
    agent = Agent(name="a", model=ScriptedModel([[assistant_message("Noted.")]]))
    started = time.perf_counter()
    await Runner.run(agent, text, session=session, run_config=run_config)  # type: ignore[arg-type]
    return (time.perf_counter() - started) * 1000.0


async def run(
    server: Server,
    emb: PrecomputedEmbedder,
    runs: int = 300,
    trials: int = 3,
    think: float = THINK_SECONDS,
) -> OverheadResult:
    set_tracing_disabled(True)
    memory = await open_memory(server.database("o_mem01session"), emb)
    store = Path(tempfile.mkdtemp(dir="/tmp")) / "t.sqlite"
    user = f"ovh-{uuid.uuid4().hex[:6]}"
    bare_ms: list[float] = []
    drained_ms: list[float] = []
    paired: list[float] = []
    back_to_back_ms: list[float] = []
    trial_medians: list[float] = []
    try:
        # One transcript per kind, each given the same runs: the SDK's own cost grows with
        # the history, so unequal transcripts would be measured as memory overhead.
        bare = SQLiteSession("bare", store)
        drained = Mem01Session(
            "mem-drained",
            user + "-drained",  # its own user: the back-to-back backlog never delays it
            inner=SQLiteSession("mem-drained", store),
            memory=memory,
        )
        back_to_back = Mem01Session("mem", user, inner=SQLiteSession("mem", store), memory=memory)
        for i in range(20):  # warm-up
            await _one(bare, TEXTS[i % len(TEXTS)])
            await _one(drained, TEXTS[i % len(TEXTS)], drained.run_config())
            await drained.flush_memory(timeout=60)
            await _one(back_to_back, TEXTS[i % len(TEXTS)], back_to_back.run_config())
        await back_to_back.flush_memory(timeout=60)
        per_trial = max(1, runs // trials)
        for _ in range(trials):
            trial: list[float] = []
            # Drained: pairs of one bare and one Mem01Session run with the same text, in
            # alternating order, each after the same idle pause (the user typing); the
            # worker is flushed, untimed, after each Mem01Session run. Drift, noise and the
            # flush's after-effects fall on both sides of a pair alike.
            for i in range(per_trial):
                text = TEXTS[i % len(TEXTS)]
                times: dict[str, float] = {}
                for kind in ("bare", "mem") if i % 2 == 0 else ("mem", "bare"):
                    await asyncio.sleep(think)
                    if kind == "bare":
                        times[kind] = await _one(bare, text)
                    else:
                        times[kind] = await _one(drained, text, drained.run_config())
                        await drained.flush_memory(timeout=60)
                bare_ms.append(times["bare"])
                drained_ms.append(times["mem"])
                trial.append(times["mem"] - times["bare"])
            paired += trial
            trial_medians.append(statistics.median(trial))
            # Back-to-back: consecutive runs, so each recall waits at the barrier for the
            # previous turn's extraction.
            for i in range(per_trial):
                text = TEXTS[i % len(TEXTS)]
                back_to_back_ms.append(await _one(back_to_back, text, back_to_back.run_config()))
            await back_to_back.flush_memory(timeout=60)  # untimed: no backlog leaks over
    finally:
        await memory.aclose()
    q = statistics.quantiles
    return OverheadResult(
        runs=len(bare_ms),
        bare_ms=statistics.median(bare_ms),
        bare_p95=q(bare_ms, n=20)[18],
        drained_ms=statistics.median(drained_ms),
        drained_p95=q(drained_ms, n=20)[18],
        paired_ms=statistics.median(paired),
        back_to_back_ms=statistics.median(back_to_back_ms),
        back_to_back_p95=q(back_to_back_ms, n=20)[18],
        trials=trial_medians,
    )


def table(r: OverheadResult) -> str:
    trials = ", ".join(f"{t:.2f}" for t in r.trials)
    return "\n".join(
        [
            "| session | median ms per run | p95 ms |",
            "|---|---:|---:|",
            f"| SQLiteSession (bare) | {r.bare_ms:.2f} | {r.bare_p95:.2f} |",
            f"| Mem01Session, worker drained between runs | {r.drained_ms:.2f} "
            f"| {r.drained_p95:.2f} |",
            f"| Mem01Session, back-to-back runs | {r.back_to_back_ms:.2f} "
            f"| {r.back_to_back_p95:.2f} |",
            f"| **overhead (median of paired differences, drained)** | **{r.paired_ms:.2f}** | |",
            f"| overhead per trial ({len(r.trials)} trials) | {trials} | |",
            f"| overhead, back-to-back (difference of medians) "
            f"| {r.back_to_back_overhead_ms:.2f} | |",
        ]
    )
