"""The embedder protocol: texts in, fixed-size vectors out."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

Vector = list[float]


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into fixed-size vectors."""

    @property
    def name(self) -> str:
        """Stable model name, recorded in the database."""
        ...

    @property
    def dim(self) -> int:
        """Dimension of every vector returned."""
        ...

    async def embed(self, texts: Sequence[str]) -> list[Vector]:
        """One vector per text, in order."""
        ...
