"""SummarizingSession through the real Runner: synthetic pair, tool pairs, races, reopen."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from agents import SQLiteSession
from agents.items import TResponseInputItem
from agents.memory import Session

from mem01session.shortterm import (
    SUMMARY_PROMPT,
    OfflineSummarizer,
    Summarizer,
    SummarizingSession,
)
from tests.shortterm.helpers import (
    assert_model_input_clean,
    big_lookup,
    lookup,
    turn,
    user_texts,
)


class Recording:
    """Summarizer double: records its input, optionally waits for a gate."""

    def __init__(self, gate: asyncio.Event | None = None) -> None:
        self.inputs: list[list[Any]] = []
        self.gate = gate
        self.started = asyncio.Event()

    async def summarize(self, items: Sequence[TResponseInputItem]) -> str:
        self.inputs.append(list(items))
        self.started.set()
        if self.gate is not None:
            await self.gate.wait()
        return await OfflineSummarizer(max_chars=100_000).summarize(items)


def msg(role: str, text: str) -> Any:
    return {"role": role, "content": text}


def test_protocols() -> None:
    assert isinstance(OfflineSummarizer(), Summarizer)
    session = SummarizingSession(SQLiteSession("s"), summarizer=OfflineSummarizer())
    assert isinstance(session, Session)


@pytest.mark.parametrize(
    ("kwargs", "named"),
    [
        ({"context_limit": 0}, "context_limit"),
        ({"keep_last_n_turns": -1}, "keep_last_n_turns"),
        ({"keep_last_n_turns": 4, "context_limit": 3}, "keep_last_n_turns"),
        ({"context_limit": 2.5}, "context_limit"),
        ({"keep_last_n_turns": True}, "keep_last_n_turns"),
        ({"max_tool_output_chars": 0}, "max_tool_output_chars"),
    ],
)
def test_validation_names_the_argument(kwargs: dict[str, Any], named: str) -> None:
    with pytest.raises(ValueError, match=named):
        SummarizingSession(SQLiteSession("s"), summarizer=OfflineSummarizer(), **kwargs)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"summarizer": "gpt-4o-mini"}, "summarizer must be a Summarizer (summarize), got str"),
        ({"background": "yes"}, "background must be True or False, got 'yes'"),
    ],
)
def test_a_summarizer_or_flag_of_the_wrong_kind_is_refused_at_once(
    kwargs: dict[str, Any], message: str
) -> None:
    """Both were accepted: the summarizer failed at the first summary, and any string
    meant background=True."""
    with pytest.raises(ValueError, match=re.escape(message)):
        SummarizingSession(SQLiteSession("s"), **kwargs)


def test_edge_values_are_accepted() -> None:
    SummarizingSession(SQLiteSession("s"), keep_last_n_turns=0, context_limit=1)
    SummarizingSession(SQLiteSession("s"), keep_last_n_turns=2, context_limit=2)


async def test_old_turns_become_a_synthetic_pair_the_model_sees_plainly(tmp_path: Path) -> None:
    session = SummarizingSession(
        SQLiteSession("s", tmp_path / "s.sqlite"),
        keep_last_n_turns=2,
        context_limit=3,
        summarizer=OfflineSummarizer(),
    )
    models = [await turn(session, f"I like colour {n}", f"noted {n}") for n in range(1, 6)]
    for model in models:
        assert_model_input_clean(model)
    last_input = list(models[-1].calls[0].input)
    assert last_input[0] == {"role": "user", "content": SUMMARY_PROMPT}
    assert last_input[1]["role"] == "assistant"
    assert "User: I like colour 1" in last_input[1]["content"]
    assert "Assistant: noted 1" in last_input[1]["content"]

    stored = await session.get_items_with_metadata()
    assert [s.synthetic for s in stored[:2]] == [True, True]
    assert [s.kind for s in stored[:2]] == ["summary_prompt", "summary"]
    assert not any(s.synthetic for s in stored[2:])
    # turn 4 made 4 > 3 real turns: 1-2 were summarized; turn 5 brought it back to 3
    verbatim = user_texts([s.item for s in stored[2:]])
    assert verbatim == ["I like colour 3", "I like colour 4", "I like colour 5"]
    raw = await session.inner.get_items()
    assert "mem01_synthetic" in json.dumps(raw)  # persisted in the store…
    assert "mem01_synthetic" not in json.dumps(await session.get_items())  # …never handed out


async def test_an_offline_summary_carries_the_earlier_ones_on_whole(tmp_path: Path) -> None:
    # Each summary was summarized as one more item of the next: nested ("Summary of the
    # earlier conversation: Earlier in this conversation ..."), clipped to its first 200
    # characters, so the oldest turns were lost after a few rounds.
    session = SummarizingSession(
        SQLiteSession("s", tmp_path / "s.sqlite"),
        keep_last_n_turns=2,
        context_limit=3,
        summarizer=OfflineSummarizer(),
    )
    for n in range(1, 16):
        await turn(session, f"I like colour {n}", f"noted {n}")
    [summary] = [s.item for s in await session.get_items_with_metadata() if s.kind == "summary"]
    text = str(summary["content"])  # type: ignore[index]
    assert text.count("Earlier in this conversation") == 1
    assert "Summary of the earlier conversation" not in text
    for n in range(1, 13):  # every turn summarized so far, oldest first
        assert f"- User: I like colour {n}\n" in text
    assert text.index("colour 1\n") < text.index("colour 12\n")


async def test_tool_pairs_stay_items_and_long_outputs_are_clipped_for_the_summarizer_only(
    tmp_path: Path,
) -> None:
    summarizer = Recording()
    session = SummarizingSession(
        SQLiteSession("s", tmp_path / "s.sqlite"),
        keep_last_n_turns=1,
        context_limit=2,
        summarizer=summarizer,
        max_tool_output_chars=100,
    )
    first = await turn(session, "fetch the report", tool=big_lookup, call_id="big")
    assert "x" * 5000 in json.dumps(first.calls[1].input)  # the model saw it whole
    await turn(session, "weather?", tool=lookup, call_id="w1")
    third = await turn(session, "and tomorrow?", tool=lookup, call_id="w2")
    for model in (first, third):
        assert_model_input_clean(model)

    (summarized,) = summarizer.inputs
    output = next(i for i in summarized if i.get("type") == "function_call_output")
    assert output["output"].startswith("x" * 100) and "4900 more characters" in output["output"]
    assert len(output["output"]) < 200

    kinds = [i.get("type") for i in await session.get_items()]
    assert kinds.count("function_call") == kinds.count("function_call_output") >= 1
    after = await turn(session, "bye")
    assert_model_input_clean(after)
    assert "x" * 200 not in json.dumps(after.calls[0].input)


async def test_summary_view_survives_reopen(tmp_path: Path) -> None:
    db = tmp_path / "s.sqlite"

    def open_session() -> SummarizingSession:
        return SummarizingSession(
            SQLiteSession("conv", db),
            keep_last_n_turns=1,
            context_limit=2,
            summarizer=OfflineSummarizer(),
        )

    session = open_session()
    for n in range(4):
        await turn(session, f"q{n}")
    before = await session.get_items_with_metadata()
    session.inner.close()  # type: ignore[attr-defined]

    reopened = open_session()
    assert await reopened.get_items_with_metadata() == before
    model = await turn(reopened, "q4")
    assert_model_input_clean(model)
    assert user_texts(model.calls[0].input)[0] == SUMMARY_PROMPT


async def test_writes_during_a_slow_summary_are_kept(tmp_path: Path) -> None:
    gate = asyncio.Event()
    summarizer = Recording(gate)
    session = SummarizingSession(
        SQLiteSession("s", tmp_path / "s.sqlite"),
        keep_last_n_turns=1,
        context_limit=2,
        summarizer=summarizer,
    )
    for n in range(2):
        await session.add_items([msg("user", f"u{n}"), msg("assistant", f"a{n}")])
    trigger = asyncio.create_task(session.add_items([msg("user", "u2"), msg("assistant", "a2")]))
    await summarizer.started.wait()
    await asyncio.gather(
        *(session.add_items([msg("user", f"late{n}"), msg("assistant", "ok")]) for n in range(5))
    )
    gate.set()
    await trigger
    texts = user_texts(await session.get_items())
    # The first summary covered u0,u1; the late turns then pushed it over again, so the
    # summarizer ran once more over the summary + u2 + late0..3.
    assert texts[0] == SUMMARY_PROMPT
    assert texts[1:] == ["late4"]
    summary = (await session.get_items())[1]["content"]
    for word in ("u0", "u1", "u2", "late0", "late3"):
        assert f"User: {word}" in summary


async def test_a_summary_of_a_stale_prefix_is_discarded(tmp_path: Path) -> None:
    gate = asyncio.Event()
    summarizer = Recording(gate)
    session = SummarizingSession(
        SQLiteSession("s", tmp_path / "s.sqlite"),
        keep_last_n_turns=1,
        context_limit=2,
        summarizer=summarizer,
    )
    for n in range(2):
        await session.add_items([msg("user", f"u{n}"), msg("assistant", f"a{n}")])
    trigger = asyncio.create_task(session.add_items([msg("user", "u2"), msg("assistant", "a2")]))
    await summarizer.started.wait()
    await session.clear_session()
    await session.add_items([msg("user", "fresh"), msg("assistant", "start")])
    gate.set()
    await trigger
    items = await session.get_items_with_metadata()
    assert [s.item for s in items] == [msg("user", "fresh"), msg("assistant", "start")]
    assert len(summarizer.inputs) == 1


async def test_many_concurrent_writers_lose_and_duplicate_nothing(tmp_path: Path) -> None:
    session = SummarizingSession(
        SQLiteSession("s", tmp_path / "s.sqlite"),
        keep_last_n_turns=3,
        context_limit=5,
        summarizer=Recording(),
    )

    async def writer(n: int) -> None:
        await session.add_items([msg("user", f"w{n:03}"), msg("assistant", f"r{n:03}")])
        await session.get_items()

    await asyncio.gather(*(writer(n) for n in range(40)))
    items = await session.get_items()
    summary = items[1]["content"] if items[0]["content"] == SUMMARY_PROMPT else ""
    verbatim = [t for t in user_texts(items) if t != SUMMARY_PROMPT]
    for n in range(40):
        word = f"w{n:03}"
        assert (word in verbatim) != (f"User: {word}" in summary), word
        assert summary.count(f"User: {word}") + verbatim.count(word) == 1, word


async def test_background_mode_summarizes_after_add_items_returns(tmp_path: Path) -> None:
    session = SummarizingSession(
        SQLiteSession("s", tmp_path / "s.sqlite"),
        keep_last_n_turns=1,
        context_limit=1,
        summarizer=OfflineSummarizer(),
        background=True,
    )
    await turn(session, "q1")
    await turn(session, "q2")
    await session.wait_idle()
    assert user_texts(await session.get_items()) == [SUMMARY_PROMPT, "q2"]


async def test_failing_summarizer_keeps_history_and_the_conversation_going() -> None:
    class Broken:
        async def summarize(self, items: Sequence[TResponseInputItem]) -> str:
            raise RuntimeError("model unavailable")

    session = SummarizingSession(
        SQLiteSession("s"), keep_last_n_turns=0, context_limit=1, summarizer=Broken()
    )
    await turn(session, "q1")
    model = await turn(session, "q2")
    assert user_texts(model.calls[0].input) == ["q1", "q2"]
    assert session.last_error is not None and "model unavailable" in session.last_error
    assert not await session.summarize_now()


async def test_keep_zero_summarizes_everything_and_summaries_fold_in() -> None:
    session = SummarizingSession(
        SQLiteSession("s"), keep_last_n_turns=0, context_limit=1, summarizer=OfflineSummarizer()
    )
    await session.add_items([msg("user", "I am Ada"), msg("assistant", "hi Ada")])
    await session.add_items([msg("user", "I code"), msg("assistant", "nice")])
    items = await session.get_items()
    assert len(items) == 2 and items[0]["content"] == SUMMARY_PROMPT
    assert "I am Ada" in items[1]["content"] and "I code" in items[1]["content"]
