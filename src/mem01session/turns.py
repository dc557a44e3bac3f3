"""From SDK session items to the text a memory job carries.

Only user and assistant *text* is kept: no system or developer items, tool calls or
their outputs, reasoning, and never a recalled memory block (invariant 1).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal, cast

from .engine.render import OPEN
from .extraction.base import TurnMessage

MEMORY_MARKER = OPEN
"""Every rendered memory block starts with this; text containing it is never extracted."""

_TEXT_PARTS = frozenset({"input_text", "output_text", "text"})


def item_text(item: Any) -> str:
    """The plain text of a message item ('' for anything else)."""
    if not isinstance(item, Mapping):
        return ""
    content = item.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        parts = [
            str(part.get("text", ""))
            for part in content
            if isinstance(part, Mapping) and part.get("type") in _TEXT_PARTS
        ]
        return "\n".join(p for p in parts if p)
    return ""


def _role(item: Mapping[str, Any]) -> str | None:
    kind = item.get("type")
    if kind not in (None, "message"):
        return None
    role = item.get("role")
    return role if isinstance(role, str) else None


def turn_messages(items: Iterable[Any]) -> list[TurnMessage]:
    """User/assistant text messages of ``items``, in order, memory blocks excluded."""
    out: list[TurnMessage] = []
    for index, raw in enumerate(items):
        if not isinstance(raw, Mapping):
            continue
        role = _role(raw)
        if role not in ("user", "assistant"):
            continue
        text = item_text(raw).strip()
        if not text or MEMORY_MARKER in text:
            continue
        ref = raw.get("id")
        out.append(
            TurnMessage(
                role=cast(Literal["user", "assistant"], role),
                text=text,
                item_ref=str(ref) if isinstance(ref, str) and ref else f"item-{index}",
            )
        )
    return out


def last_user_text(items: Sequence[Any]) -> str:
    """Text of the last user message in ``items`` (the current query), or ''."""
    for raw in reversed(items):
        if isinstance(raw, Mapping) and _role(raw) == "user":
            text = item_text(raw)
            if MEMORY_MARKER not in text:
                return text.strip()
    return ""


def last_user_index(items: Sequence[Any]) -> int | None:
    """Index of the last user message in ``items``."""
    for index in range(len(items) - 1, -1, -1):
        raw = items[index]
        if isinstance(raw, Mapping) and _role(raw) == "user":
            return index
    return None
