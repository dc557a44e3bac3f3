"""TrimmingSession through the real Runner: last N turns, whole tool pairs, reopen, races."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from agents import SQLiteSession
from agents.memory import Session

from mem01session.shortterm import TrimmingSession
from mem01session.shortterm._items import mark
from tests.shortterm.helpers import assert_model_input_clean, lookup, turn, user_texts


def msg(role: str, text: str) -> Any:
    return {"role": role, "content": text}


def test_satisfies_the_sdk_protocol() -> None:
    assert isinstance(TrimmingSession(SQLiteSession("s"), max_turns=1), Session)


async def test_model_sees_only_the_last_turns(tmp_path: Path) -> None:
    session = TrimmingSession(SQLiteSession("t", tmp_path / "t.sqlite"), max_turns=2)
    for n in range(1, 4):
        await turn(session, f"q{n}")
    model = await turn(session, "q4")
    assert user_texts(model.calls[0].input) == ["q2", "q3", "q4"]
    assert len(await session.inner.get_items()) == 8  # hidden, not deleted


async def test_tool_call_and_output_are_kept_or_dropped_together(tmp_path: Path) -> None:
    session = TrimmingSession(SQLiteSession("t", tmp_path / "t.sqlite"), max_turns=1)
    first = await turn(session, "weather?", tool=lookup, call_id="call-1")
    second = await turn(session, "and tomorrow?")
    third = await turn(session, "thanks")
    for model in (first, second, third):
        assert_model_input_clean(model)
    seen = [i.get("type") for i in second.calls[0].input]
    assert seen.count("function_call") == 1 and seen.count("function_call_output") == 1
    assert user_texts(third.calls[0].input) == ["and tomorrow?", "thanks"]
    assert "function_call" not in [i.get("type") for i in third.calls[0].input]


async def test_a_call_whose_output_lands_in_a_later_turn_pulls_the_cut_back() -> None:
    inner = SQLiteSession("t")
    await inner.add_items(
        [
            msg("user", "u1"),
            {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
            msg("user", "u2"),
            {"type": "function_call_output", "call_id": "c1", "output": "ok"},
            msg("assistant", "a2"),
        ]
    )
    items = await TrimmingSession(inner, max_turns=1).get_items()
    assert user_texts(items) == ["u1", "u2"]
    # limit keeps the SDK's "latest N" meaning, minus an output orphaned by the cut
    limited = await TrimmingSession(inner, max_turns=1).get_items(limit=2)
    assert limited == [msg("assistant", "a2")]


async def test_synthetic_items_never_start_a_turn_and_are_stripped() -> None:
    inner = SQLiteSession("t")
    await inner.add_items(
        [
            msg("user", "u1"),
            msg("assistant", "a1"),
            mark(msg("user", "synthetic"), "summary_prompt"),
            msg("assistant", "a-synth"),
            msg("user", "u2"),
        ]
    )
    items = await TrimmingSession(inner, max_turns=2).get_items()
    assert items[2] == msg("user", "synthetic")  # kept, inside u1's turn, marker gone
    assert user_texts(await TrimmingSession(inner, max_turns=1).get_items()) == ["u2"]


async def test_max_turns_changes_at_run_time_and_is_validated() -> None:
    inner = SQLiteSession("t")
    for n in range(5):
        await inner.add_items([msg("user", f"u{n}"), msg("assistant", f"a{n}")])
    session = TrimmingSession(inner, max_turns=1)
    assert user_texts(await session.get_items()) == ["u4"]
    session.max_turns = 3
    assert user_texts(await session.get_items()) == ["u2", "u3", "u4"]
    for bad in (0, -1, 1.5, "2", True):
        with pytest.raises(ValueError, match="max_turns"):
            session.max_turns = bad  # type: ignore[assignment]
        with pytest.raises(ValueError, match="max_turns"):
            TrimmingSession(inner, max_turns=bad)  # type: ignore[arg-type]
    assert session.max_turns == 3


async def test_view_survives_reopen_and_compact_removes_only_hidden_items(tmp_path: Path) -> None:
    db = tmp_path / "t.sqlite"
    session = TrimmingSession(SQLiteSession("conv", db), max_turns=2)
    await turn(session, "q1", tool=lookup, call_id="c1")
    for n in range(2, 5):
        await turn(session, f"q{n}")
    view = await session.get_items()
    session.inner.close()  # type: ignore[attr-defined]

    reopened = TrimmingSession(SQLiteSession("conv", db), max_turns=2)
    assert await reopened.get_items() == view
    assert await reopened.compact() == 6  # q1 (4 items with its tool pair) + q2 (2)
    assert await reopened.compact() == 0
    reopened.inner.close()  # type: ignore[attr-defined]

    again = TrimmingSession(SQLiteSession("conv", db), max_turns=5)
    assert await again.get_items() == view
    assert await again.inner.get_items() == view
    model = await turn(again, "q5")
    assert user_texts(model.calls[0].input) == ["q3", "q4", "q5"]


async def test_compact_on_a_non_sqlite_inner_uses_clear_and_add() -> None:
    class ListSession:
        session_settings = None

        def __init__(self) -> None:
            self.session_id = "list"
            self.items: list[Any] = []

        async def get_items(self, limit: int | None = None) -> list[Any]:
            return list(self.items if limit is None else self.items[-limit:])

        async def add_items(self, items: list[Any]) -> None:
            self.items.extend(items)

        async def pop_item(self) -> Any:
            return self.items.pop() if self.items else None

        async def clear_session(self) -> None:
            self.items.clear()

    inner = ListSession()
    session = TrimmingSession(inner, max_turns=1)
    await turn(session, "q1")
    await turn(session, "q2")
    assert await session.compact() == 2
    assert user_texts(inner.items) == ["q2"]


async def test_concurrent_writers_lose_and_duplicate_nothing(tmp_path: Path) -> None:
    session = TrimmingSession(SQLiteSession("t", tmp_path / "t.sqlite"), max_turns=1000)

    async def writer(n: int) -> None:
        await session.add_items([msg("user", f"u{n:03}"), msg("assistant", f"a{n:03}")])
        await session.get_items()
        if n % 10 == 0:
            await session.compact()

    await asyncio.gather(*(writer(n) for n in range(60)))
    items = await session.inner.get_items()
    assert sorted(user_texts(items)) == [f"u{n:03}" for n in range(60)]
    assert len(items) == 120
    pairs = list(zip(items[::2], items[1::2], strict=True))
    assert all(u["content"][1:] == a["content"][1:] for u, a in pairs)  # never interleaved

    session.max_turns = 5
    await asyncio.gather(*(writer(n) for n in range(60, 80)), session.compact())
    await session.compact()
    assert len(await session.inner.get_items()) == 10
