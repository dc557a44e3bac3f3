"""Run the scenario: one user, three conversations, three strategies on Friday.

Monday the user says where they live and what the rent is; Wednesday that they moved;
Friday, in a fresh conversation, asks where they live now and what the rent was. The
clock is simulated (no sleeping); everything else is real: the SDK ``Runner``, the
engine on PostgreSQL, extraction, and the answering model (OpenAI with a key, else the
offline model that answers only from its input).

With a key the answering model speaks the API of ``MEM01_OPENAI_API``: the Responses API
for OpenAI, Chat Completions (``OpenAIChatCompletionsModel``) when ``OPENAI_BASE_URL``
names another server (vLLM, Ollama, llama.cpp, LM Studio).
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agents import Agent, ModelSettings, Runner
from agents.memory import Session, SQLiteSession
from agents.models.interface import Model

from ..config import Settings
from ..memory import Memory
from ..private import private_file, private_folder
from ..session import Mem01Session
from .offline_model import OfflineAnswerModel
from .recording import RecordingModel
from .report import DemoReport, Strategy, Transcript, collect_evidence

DAYS: dict[str, datetime] = {
    "Monday": datetime(2026, 11, 23, 9, 0, tzinfo=UTC),
    "Wednesday": datetime(2026, 11, 25, 18, 30, tzinfo=UTC),
    "Friday": datetime(2026, 11, 27, 12, 15, tzinfo=UTC),
}
SCRIPT: dict[str, list[str]] = {
    "Monday": [
        "Hi! Can you help me plan my budget this month?",
        "I live in New York City and I pay $2,400 a month in rent.",
        "Thanks, that's all for today.",
    ],
    "Wednesday": ["I moved to San Francisco yesterday."],
    "Friday": ["Where do I live now, and what was my rent before?"],
}
QUESTION = SCRIPT["Friday"][0]
INSTRUCTIONS = "You are a helpful assistant. Answer briefly."


@dataclass
class SimulatedClock:
    """The demo's clock: set to each day in turn."""

    now: datetime = DAYS["Monday"]

    def __call__(self) -> datetime:
        return self.now


def answering_model(settings: Settings) -> tuple[Model, str]:
    """The demo's answering model and a label saying what it is: OpenAI (or the server at
    ``OPENAI_BASE_URL``) with a key, over ``settings.model_api``; else the offline model."""
    from agents import set_tracing_disabled

    if not settings.openai_api_key:
        set_tracing_disabled(True)  # no key: nowhere to send traces
        return OfflineAnswerModel(), "offline answering model (answers only from its input)"
    from agents import OpenAIChatCompletionsModel, OpenAIResponsesModel
    from openai import AsyncOpenAI

    if settings.openai_base_url:
        set_tracing_disabled(True)  # traces go to OpenAI, which this key may not open
    client = AsyncOpenAI(
        api_key=settings.openai_api_key,
        base_url=settings.openai_base_url,
        timeout=settings.llm_timeout,
    )
    where = settings.openai_base_url or "OpenAI"
    if settings.model_api == "chat":
        model: Model = OpenAIChatCompletionsModel(settings.llm_model, client)
        return model, f"{settings.llm_model} at {where} (Chat Completions)"
    return OpenAIResponsesModel(settings.llm_model, client), (
        f"{settings.llm_model} at {where} (Responses API)"
    )


async def _talk(agent: Agent[Any], session: Session, text: str, run_config: Any = None) -> str:
    result = await Runner.run(agent, text, session=session, run_config=run_config)
    return str(result.final_output)


async def run_demo(*, keep: bool = False, settings: Settings | None = None) -> DemoReport:
    """Run the whole scenario and return the evidence (nothing is printed here)."""
    started = time.perf_counter()
    settings = settings or Settings.from_env()
    clock = SimulatedClock()
    memory = await Memory.open(settings, clock=clock)
    engine = await memory.engine()
    extractor = memory.extractor
    model, model_label = answering_model(settings)
    limits = ModelSettings(max_tokens=settings.llm_max_tokens)

    def agent(answering: Model) -> Agent[Any]:
        return Agent(
            name="assistant", instructions=INSTRUCTIONS, model=answering, model_settings=limits
        )

    user_id = f"demo-{uuid.uuid4().hex[:8]}"
    folder = Path(settings.home) if keep else Path(tempfile.mkdtemp(prefix="mem01-demo-"))
    private_folder(folder)
    store = private_file(folder / ("demo-transcripts.sqlite" if keep else "transcripts.sqlite"))
    run = user_id.removeprefix("demo-")

    transcripts: list[Transcript] = []
    # The other strategies' transcripts (they hold the user's words too) are scratch, even
    # with ``keep``: what is kept is the memory and its own sessions' transcripts, which an
    # erase with ``transcripts`` reaches (memory knows those conversations are the user's).
    scratch = Path(tempfile.mkdtemp(prefix="mem01-demo-strategies-"))
    compared = private_file(scratch / "strategies.sqlite")
    replay = SQLiteSession(f"{user_id}-replay", compared)  # strategy 2: one reused session
    try:
        for day in ("Monday", "Wednesday"):
            clock.now = DAYS[day]
            sid = f"{day.lower()}-{run}"
            session = Mem01Session(sid, user_id, inner=SQLiteSession(sid, store), memory=memory)
            transcript = Transcript(day, sid)
            for text in SCRIPT[day]:
                answer = await _talk(agent(model), session, text, session.run_config())
                transcript.turns.append((text, answer))
                await _talk(agent(model), replay, text)
            await session.flush_memory(timeout=60)
            transcript.items = await session.get_items()
            transcripts.append(transcript)

        clock.now = DAYS["Friday"]
        strategies: list[Strategy] = []
        fresh_model = RecordingModel(model)
        fresh = SQLiteSession(f"fresh-{run}", compared)
        answer = await _talk(agent(fresh_model), fresh, QUESTION)
        strategies.append(
            Strategy.of(
                "fresh session (no memory)", fresh_model.inputs[-1], answer, engine.token_counter
            )
        )

        replay_model = RecordingModel(model)
        answer = await _talk(agent(replay_model), replay, QUESTION)
        strategies.append(
            Strategy.of(
                "one reused session (replay Mon+Wed+Fri)",
                replay_model.inputs[-1],
                answer,
                engine.token_counter,
            )
        )

        friday_model = RecordingModel(model)
        sid = f"friday-{run}"
        friday = Mem01Session(sid, user_id, inner=SQLiteSession(sid, store), memory=memory)
        answer = await _talk(agent(friday_model), friday, QUESTION, friday.run_config())
        strategies.append(
            Strategy.of(
                "Mem01Session (Friday transcript + memory)",
                friday_model.inputs[-1],
                answer,
                engine.token_counter,
            )
        )
        await friday.flush_memory(timeout=60)
        friday_transcript = Transcript(
            "Friday", sid, [(QUESTION, answer)], await friday.get_items()
        )
        transcripts.append(friday_transcript)

        report = await collect_evidence(
            engine=engine,
            user_id=user_id,
            question=QUESTION,
            transcripts=transcripts,
            strategies=strategies,
            recall=friday.last_recall,
            offline={
                "answers": model_label,
                "extraction": extractor.name,
                "embeddings": engine.embedder.name,
                "database": "embedded PostgreSQL" if engine.db.embedded else "MEM01_DATABASE_URL",
                "tokenizer": engine.token_counter.name,
            },
            days={d: t.isoformat() for d, t in DAYS.items()},
        )
        if not keep:
            # A scratch user, all of whose turns are applied (flushed above): no tombstone,
            # so that the demo leaves nothing behind, not even in the users list.
            await engine.erase_user(user_id, tombstone=False)
        report.seconds = time.perf_counter() - started
        report.kept = keep
        return report
    finally:
        await memory.aclose()
        shutil.rmtree(scratch, ignore_errors=True)
        if not keep:
            shutil.rmtree(folder, ignore_errors=True)  # scratch transcripts


def dump_json(report: DemoReport, path: Path) -> None:
    private_file(path).write_text(json.dumps(report.to_json(), indent=2, default=str))
