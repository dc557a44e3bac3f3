"""SDK input items: their text, the text a memory job carries, and the memory markers.

Only user and assistant *text* goes to extraction: no system or developer items, tool
calls or their outputs, reasoning, and never recalled memory (invariant 1). Recalled
memory is recognised by its type, which only the model-input filter creates: a
:class:`MemoryItem` (the block as a message of its own) or a :class:`MemoryCarrier` (a copy
of the current user message with the block in front of its words; when its content is a
list of parts, the part holding the block is a :class:`MemoryPart`). Nothing a user types
can look like these, and a user who types ``<memory>`` is treated like any other user.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Literal, cast

from agents.items import TResponseInputItem

from ..queue.turns import TurnMessage, storable_text


class MemoryItem(dict[str, Any]):
    """An input item that carries recalled memory; made by the model-input filter only.

    A plain ``dict`` to the SDK and to every API it talks to; its type is the marker.
    """


SEPARATOR = "\n\n"
"""Between the block and the user's words, inside one text: chat templates trim the ends
of a message or of each of its parts, and join parts with nothing; none of them touches
whitespace inside a text (that would glue the user's own words together too)."""


class MemoryPart(dict[str, Any]):
    """A text part that carries recalled memory, made by the model-input filter only: the
    block, then (``said``, when not empty) the user's own words of the part it was put in
    front of, after a blank line."""

    def __init__(self, part: Mapping[str, Any], block: str, said: str = "") -> None:
        super().__init__(part)
        self["text"] = f"{block}{SEPARATOR}{said}" if said else block
        self.block = block
        self.said = said


class MemoryCarrier(dict[str, Any]):
    """A copy of the current user message with the memory block in front of its words
    (``block``); ``original`` is the message as the SDK holds it (never changed)."""

    def __init__(self, original: Mapping[str, Any], content: Any, block: str) -> None:
        super().__init__(original)
        self["content"] = content
        self.original = original
        self.block = block


def is_memory(item: object) -> bool:
    """Whether ``item`` is a message of recalled memory."""
    return isinstance(item, MemoryItem)


def memory_texts(items: Iterable[Any]) -> list[str]:
    """The memory blocks ``items`` carry, as messages of their own or in front of the
    user's message."""
    out: list[str] = []
    for item in items:
        if isinstance(item, MemoryItem):
            out.append(str(item.get("content", "")))
        elif isinstance(item, MemoryCarrier):
            out.append(item.block)
    return out


_TEXT_PARTS = frozenset({"input_text", "output_text", "text"})


def item_text(item: Any) -> str:
    """The plain text of a message item ('' for anything else); of a message that carries
    the memory block, the user's words only."""
    if isinstance(item, MemoryCarrier):
        return item_text(item.original)
    if not isinstance(item, Mapping):
        return ""
    content = item.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        parts = [
            part.said if isinstance(part, MemoryPart) else str(part.get("text", ""))
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


def redacted(items: Sequence[TResponseInputItem]) -> list[TResponseInputItem]:
    """``items`` with the secrets in their user and assistant messages' text replaced by
    ``[redacted]`` (copies of the messages that held one; the rest as they are), for a
    transcript that must not keep them (``transcript_secrets="redact"``)."""
    from ..secrets.scan import redact_secrets

    def text(value: str) -> str:
        return redact_secrets(value)[0]

    out: list[TResponseInputItem] = []
    for item in items:
        if not isinstance(item, Mapping) or _role(item) not in ("user", "assistant"):
            out.append(item)
            continue
        content = item.get("content")
        if isinstance(content, str):
            content = text(content)
        elif isinstance(content, Sequence):
            content = [
                {**part, "text": text(str(part.get("text", "")))}
                if isinstance(part, Mapping) and part.get("type") in _TEXT_PARTS
                else part
                for part in content
            ]
        out.append(cast(TResponseInputItem, {**item, "content": content}))
    return out


def turn_messages(items: Iterable[Any]) -> list[TurnMessage]:
    """User/assistant text messages of ``items``, in order, memory blocks excluded, each
    made storable (:func:`~mem01session.queue.turns.storable_text`). A message's
    ``item_ref`` is the SDK item's id, where it has one (the SDK gives user input none:
    the turn's job and the message's place in it say which it was)."""
    out: list[TurnMessage] = []
    for raw in items:
        if not isinstance(raw, Mapping) or is_memory(raw):
            continue
        role = _role(raw)
        if role not in ("user", "assistant"):
            continue
        text = storable_text(item_text(raw)).strip()
        if not text:
            continue
        ref = raw.get("id")
        out.append(
            TurnMessage(
                role=cast(Literal["user", "assistant"], role),
                text=text,
                item_ref=storable_text(ref) if isinstance(ref, str) and ref else None,
            )
        )
    return out


def user_texts_newest_first(items: Sequence[Any]) -> Iterator[str]:
    """The user messages of ``items``, newest first, as :func:`turn_messages` stores them."""
    for raw in reversed(items):
        if isinstance(raw, Mapping) and not is_memory(raw) and _role(raw) == "user":
            yield storable_text(item_text(raw)).strip()


def last_user_text(items: Sequence[Any]) -> str:
    """Text of the last user message in ``items`` (the current query), or ''."""
    for raw in reversed(items):
        if isinstance(raw, Mapping) and not is_memory(raw) and _role(raw) == "user":
            return item_text(raw).strip()
    return ""


def last_user_index(items: Sequence[Any]) -> int | None:
    """Index of the last user message in ``items``."""
    for index in range(len(items) - 1, -1, -1):
        raw = items[index]
        if isinstance(raw, Mapping) and not is_memory(raw) and _role(raw) == "user":
            return index
    return None
