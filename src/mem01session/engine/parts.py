"""What every engine operation needs: the database, the embedder, the token counter, the
clock, and which episodes are kept.

The read, write, erase and inspection modules take an :class:`EngineParts`;
:class:`~mem01session.engine.core.BeliefEngine` holds one and adds nothing but the API.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from ..checks import aware
from ..db import Database
from ..embeddings import Embedder
from ..tokens import TokenCounter
from .episodes import EpisodePolicy

Clock = Callable[[], datetime]


def utcnow() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class EngineParts:
    """The engine's collaborators (see the module docstring)."""

    db: Database
    embedder: Embedder
    token_counter: TokenCounter
    clock: Clock = utcnow
    episodes: EpisodePolicy = field(default_factory=EpisodePolicy)

    def now(self) -> datetime:
        """The clock's reading, time-zone aware."""
        return aware(self.clock())
