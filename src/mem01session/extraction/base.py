"""The extractor protocol the session's background worker calls."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal, Protocol, runtime_checkable

from ..ops import Op


@dataclass(frozen=True)
class TurnMessage:
    """One text message of a turn (user or assistant); never tool payloads or memory."""

    role: Literal["user", "assistant"]
    text: str
    item_ref: str | None = None


@dataclass(frozen=True)
class Turn:
    """The text-only content of one conversational turn, as stored in a job."""

    session_id: str
    messages: tuple[TurnMessage, ...]
    observed_at: datetime


@dataclass(frozen=True)
class Candidate:
    """An active belief shown to the extractor under a short alias (``b1``), never its id."""

    alias: str
    content: str
    key: str | None = None
    valid_from: datetime | None = None


@dataclass(frozen=True)
class Extraction:
    """The extractor's answer: ops addressing candidates by alias, plus token usage."""

    ops: tuple[Op, ...]
    usage: dict[str, int] = field(default_factory=dict)
    notes: tuple[str, ...] = ()


@runtime_checkable
class Extractor(Protocol):
    """Proposes lifecycle ops for one turn, given the user's most relevant active beliefs."""

    @property
    def name(self) -> str: ...

    async def extract(
        self, turn: Turn, candidates: Sequence[Candidate], now: datetime
    ) -> Extraction: ...
