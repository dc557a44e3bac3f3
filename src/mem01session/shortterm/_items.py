"""Item helpers shared by the short-term strategies: turns, tool pairs, synthetic markers."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

from agents.items import TResponseInputItem

SYNTHETIC_KEY = "mem01_synthetic"
"""Stored on synthetic items in the inner session; stripped before any item leaves a wrapper."""


def is_synthetic(item: TResponseInputItem) -> bool:
    """Whether ``item`` carries the synthetic marker."""
    return isinstance(item, Mapping) and bool(item.get(SYNTHETIC_KEY))


def synthetic_kind(item: TResponseInputItem) -> str | None:
    """The marker's value (e.g. ``"summary"``), or None for a real item."""
    if not isinstance(item, Mapping):
        return None
    kind = item.get(SYNTHETIC_KEY)
    return str(kind) if kind else None


def mark(item: Mapping[str, Any], kind: str) -> TResponseInputItem:
    """A copy of ``item`` carrying the synthetic marker ``kind``."""
    return cast(TResponseInputItem, {**item, SYNTHETIC_KEY: kind})


def strip(item: TResponseInputItem) -> TResponseInputItem:
    """``item`` without the synthetic marker (the same object when it has none)."""
    if isinstance(item, Mapping) and SYNTHETIC_KEY in item:
        return cast(TResponseInputItem, {k: v for k, v in item.items() if k != SYNTHETIC_KEY})
    return item


def starts_turn(item: TResponseInputItem) -> bool:
    """A real user message: the first item of a turn. Synthetic items never start one."""
    if not isinstance(item, Mapping) or is_synthetic(item):
        return False
    return item.get("role") == "user" and item.get("type", "message") == "message"


def turn_starts(items: Sequence[TResponseInputItem]) -> list[int]:
    """Indexes of the items that start a turn."""
    return [i for i, item in enumerate(items) if starts_turn(item)]


def _call_id(item: TResponseInputItem) -> str | None:
    if not isinstance(item, Mapping):
        return None
    call_id = item.get("call_id")
    return call_id if isinstance(call_id, str) else None


def _is_output(item: TResponseInputItem) -> bool:
    if not isinstance(item, Mapping):
        return False
    return str(item.get("type", "")).endswith("_output")


def _is_call(item: TResponseInputItem) -> bool:
    return _call_id(item) is not None and not _is_output(item)


def orphaned_call_index(items: Sequence[TResponseInputItem], cut: int) -> int | None:
    """Lowest index before ``cut`` holding a call whose output is at or after ``cut``."""
    kept_outputs = {_call_id(item) for item in items[cut:] if _is_output(item)}
    kept_outputs.discard(None)
    hits = [i for i in range(cut) if _is_call(items[i]) and _call_id(items[i]) in kept_outputs]
    return min(hits) if hits else None


def turn_cut(items: Sequence[TResponseInputItem], keep_turns: int) -> int:
    """Index where the last ``keep_turns`` turns begin, never separating a call from its output.

    Items before the first real user message belong to no turn and are dropped with the
    oldest turns. A call whose output lies in a kept turn pulls the cut back to the start of
    the call's turn, so the pair stays together.
    """
    starts = turn_starts(items)
    if keep_turns <= 0:
        cut = len(items)
    elif len(starts) <= keep_turns:
        return 0
    else:
        cut = starts[-keep_turns]
    while (call := orphaned_call_index(items, cut)) is not None:
        earlier = [s for s in starts if s <= call]
        cut = earlier[-1] if earlier else 0
    return cut


def item_cut(items: Sequence[TResponseInputItem], keep_items: int) -> int:
    """Index where at most the last ``keep_items`` items begin, dropping orphaned outputs.

    Moves the cut forward past any kept output whose call was cut, so the result never
    exceeds ``keep_items`` and never starts with half of a tool pair.
    """
    cut = max(0, len(items) - max(keep_items, 0))
    while cut < len(items) and orphaned_call_index(items, cut) is not None:
        cut += 1
    return cut


def missing_calls(items: Sequence[TResponseInputItem]) -> bool:
    """Whether some tool output in ``items`` has no call in ``items``."""
    calls = {_call_id(item) for item in items if _is_call(item)}
    return any(_is_output(item) and _call_id(item) not in calls for item in items)


def drop_orphan_outputs(items: Sequence[TResponseInputItem]) -> list[TResponseInputItem]:
    """``items`` without tool outputs whose call is absent (the API rejects those)."""
    calls = {_call_id(item) for item in items if _is_call(item)}
    return [item for item in items if not (_is_output(item) and _call_id(item) not in calls)]


def limit_view(items: list[TResponseInputItem], limit: int | None) -> list[TResponseInputItem]:
    """The SDK ``limit`` semantics (latest N items), minus any output orphaned by the cut."""
    if limit is None or limit >= len(items):
        return items
    return drop_orphan_outputs(items[item_cut(items, limit) :])
