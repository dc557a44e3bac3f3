"""What the worker asks of an extractor: ops for one turn, given candidate beliefs.

Implementations live in :mod:`mem01session.extraction`; any object with this shape works.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol, runtime_checkable

from ..engine.ops import Op
from .turns import Turn


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
