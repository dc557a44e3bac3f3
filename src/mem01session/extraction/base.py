"""What an extractor is given and what it answers: the ``Extractor`` protocol and its types.

The worker (:mod:`mem01session.queue.worker`) calls any object of this shape; the two the
library ships live beside this module (:mod:`.rules`, :mod:`.openai_extractor`), and yours
may live anywhere. Whatever an extractor proposes, the worker screens it
(:func:`~mem01session.extraction.hygiene.screen`) before the engine sees it.

A :class:`Turn` is also what a job carries (:mod:`mem01session.queue.turns` makes its text
storable): the text-only content of one conversational turn, never tool payloads or memory.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal, Protocol, runtime_checkable

from ..engine.ops import Op


@dataclass(frozen=True)
class TurnMessage:
    """One text message of a turn (user or assistant); never tool payloads or memory."""

    role: Literal["user", "assistant"]
    text: str
    item_ref: str | None = None


@dataclass(frozen=True)
class Turn:
    """The text-only content of one conversational turn, as stored in a job. ``before``:
    the assistant message said just before the turn in its conversation (screened, as
    stored with the turn before), if any: not part of the turn, but what a short answer
    in it ("Lisbon.") answers ("Where do you live now?")."""

    session_id: str
    messages: tuple[TurnMessage, ...]
    observed_at: datetime
    before: str | None = None


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


WAITING_AFTER: ContextVar[str | None] = ContextVar("mem01_extraction_waiting_after", default=None)
"""What an extractor is waiting to try again after (a rate limit, a server error), set in
the task that called it: an extraction cut short by its time limit says so, not only that
time ran out."""

__all__ = ["WAITING_AFTER", "Candidate", "Extraction", "Extractor", "Turn", "TurnMessage"]
