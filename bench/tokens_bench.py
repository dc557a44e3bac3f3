"""Benchmark 3: tokens the model receives, fresh session vs reused session vs Mem01Session.

Real ``Runner``, the project's offline answering model (wrapped to record each input),
the rule extractor, a simulated clock. Tokens = the shared tokenizer's count of the
instructions plus the JSON of the input items the model was given.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from agents import Agent, Runner, set_tracing_disabled
from agents.memory import Session, SQLiteSession

from mem01session import Mem01Session, Memory
from mem01session.demo.offline_model import OfflineAnswerModel
from mem01session.demo.recording import RecordingModel
from mem01session.demo.run import DAYS, INSTRUCTIONS, SCRIPT
from mem01session.tokens import default_token_counter

from .common import PrecomputedEmbedder, Server, open_memory, scratch

QUESTION_40 = "Where do I live now, and what is my dog's name?"
NEEDED_40 = ("Denver", "Rex")  # what the model must be given to answer QUESTION_40
CHAT = [
    "Can you suggest a quick recipe for dinner tonight?",
    "What's a good way to stretch after a run?",
    "Give me three ideas for a rainy Sunday.",
    "How do I make my tomato plants grow better?",
    "Recommend a podcast about history, please.",
]


def scenario_40() -> list[list[str]]:
    """40 conversations: facts early, a move at 5, chat, questions at 10 and 40."""
    convs: list[list[str]] = []
    for n in range(1, 41):
        if n == 1:
            turns = ["Hi, I'm Dana. I live in Boston and I work as a nurse.", CHAT[0]]
        elif n == 2:
            turns = ["I have a dog named Rex.", CHAT[1]]
        elif n == 5:
            turns = ["I moved to Denver last week.", CHAT[2]]
        elif n in (10, 40):
            turns = [CHAT[n % len(CHAT)], QUESTION_40]
        else:
            turns = [CHAT[n % len(CHAT)], CHAT[(n + 2) % len(CHAT)]]
        convs.append(turns)
    return convs


def scenario_demo() -> list[list[str]]:
    return [SCRIPT[day] for day in ("Monday", "Wednesday", "Friday")]


@dataclass
class TokensResult:
    tokenizer: str = ""
    # scenario -> strategy -> conversation number -> tokens at its last model call
    table: dict[str, dict[str, dict[int, int]]] = field(default_factory=dict)
    # strategy -> conversation number -> whether that input held every NEEDED_40 word
    answerable: dict[str, dict[int, bool]] = field(default_factory=dict)


def _tokens(model: RecordingModel) -> int:
    counter = default_token_counter()
    items = model.inputs[-1]
    return counter.count(INSTRUCTIONS) + counter.count(json.dumps(items, default=str))


@dataclass
class SettableClock:
    now: datetime = datetime(2026, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


async def _play(
    convs: list[list[str]],
    strategy: str,
    memory: Memory,
    clock: SettableClock,
    store: Path,
    marks: set[int],
    start: datetime,
    needed: dict[int, bool] | None = None,
) -> dict[int, int]:
    user = f"tok-{uuid.uuid4().hex[:8]}"
    model = RecordingModel(OfflineAnswerModel())
    agent = Agent(name="assistant", instructions=INSTRUCTIONS, model=model)
    reused = SQLiteSession(f"{user}-reused", store)
    out: dict[int, int] = {}
    for n, turns in enumerate(convs, start=1):
        clock.now = start + timedelta(days=n)
        session: Session
        run_config = None
        if strategy == "fresh session":
            session = SQLiteSession(f"{user}-{n}", store)
        elif strategy == "reused session (replays everything)":
            session = reused
        else:
            mem = Mem01Session(
                f"{user}-{n}", user, inner=SQLiteSession(f"{user}-{n}", store), memory=memory
            )
            session, run_config = mem, mem.run_config()
        for text in turns:
            await Runner.run(agent, text, session=session, run_config=run_config)
        if isinstance(session, Mem01Session):
            await session.flush_memory(timeout=60)
        if n in marks:
            out[n] = _tokens(model)
            if needed is not None and QUESTION_40 in turns:
                given = json.dumps(model.inputs[-1], default=str)
                needed[n] = all(word in given for word in NEEDED_40)
    return out


STRATEGIES = ("fresh session", "reused session (replays everything)", "Mem01Session")


async def run(server: Server, emb: PrecomputedEmbedder) -> TokensResult:
    set_tracing_disabled(True)
    out = TokensResult(tokenizer=default_token_counter().name)
    clock = SettableClock()
    memory = await open_memory(server.database("t_mem01session"), emb, clock=clock)
    store = Path(scratch()) / "transcripts.sqlite"
    try:
        for name, convs, marks, start in (
            (
                "demo (3 conversations)",
                scenario_demo(),
                {1, 2, 3},
                DAYS["Monday"] - timedelta(days=1),
            ),
            ("40 conversations", scenario_40(), {1, 10, 40}, datetime(2026, 1, 1, tzinfo=UTC)),
        ):
            out.table[name] = {}
            for s in STRATEGIES:
                needed = out.answerable.setdefault(s, {}) if name.startswith("40") else None
                out.table[name][s] = await _play(
                    convs, s, memory, clock, store, marks, start, needed
                )
    finally:
        await memory.aclose()
    return out


def table(result: TokensResult) -> str:
    lines: list[str] = []
    for scenario, by_strategy in result.table.items():
        marks = sorted(next(iter(by_strategy.values())))
        lines += [
            f"**{scenario}** (tokens of the model input at the last turn of conversation N)",
            "",
            "| strategy | " + " | ".join(f"conv {m}" for m in marks) + " |",
            "|---|" + "---:|" * len(marks),
        ]
        for strategy, by_mark in by_strategy.items():
            lines.append(f"| {strategy} | " + " | ".join(f"{by_mark[m]:,}" for m in marks) + " |")
        lines.append("")
    marks = sorted(next(iter(result.answerable.values()), {}))
    lines += [
        f'Did the input at the question ("{QUESTION_40}") hold what answers it '
        f"({' and '.join(NEEDED_40)})?",
        "",
        "| strategy | " + " | ".join(f"conv {m}" for m in marks) + " |",
        "|---|" + "---:|" * len(marks),
    ]
    for strategy, held in result.answerable.items():
        cells = " | ".join("yes" if held[m] else "no" for m in marks)
        lines.append(f"| {strategy} | {cells} |")
    return "\n".join(lines) + "\n"
