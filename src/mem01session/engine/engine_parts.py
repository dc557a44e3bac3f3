"""What every engine operation needs: the database, the embedder, the token counter, the
clock, and which episodes are kept.

The default token counter is loaded on first use (:attr:`EngineParts.token_counter`):
loading a BPE takes seconds, and an engine that only lists or edits beliefs (the
inspector commands) counts no tokens.

The read, write and erase modules take an :class:`EngineParts` (the inspection module
takes the database's direct pool alone); :class:`~mem01session.engine.belief_engine.BeliefEngine`
holds one and adds nothing but the API.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from ..checks import aware
from ..db import Database
from ..embeddings import Embedder
from ..tokens import TokenCounter, default_token_counter
from .episodes import EpisodePolicy

Clock = Callable[[], datetime]


def utcnow() -> datetime:
    return datetime.now(UTC)


class EpisodeCounts:
    """How many episodes each user held when last read (as their last recall's statement
    returned it), for the users this process recalled lately: how a user's vectors are
    read follows from it (:mod:`.episode_candidates`), and a count one recall old chooses
    as well as a fresh one would. At most :attr:`MAX_USERS`, the least recently read
    forgotten first."""

    MAX_USERS = 100_000

    def __init__(self) -> None:
        self._counts: OrderedDict[str, int] = OrderedDict()

    def get(self, user_id: str) -> int | None:
        count = self._counts.get(user_id)
        if count is not None:
            self._counts.move_to_end(user_id)
        return count

    def set(self, user_id: str, count: int) -> None:
        self._counts[user_id] = count
        self._counts.move_to_end(user_id)
        if len(self._counts) > self.MAX_USERS:
            self._counts.popitem(last=False)

    def forget(self, user_id: str) -> None:
        self._counts.pop(user_id, None)


class TableEstimate:
    """The planner's estimate of the episodes table's rows (``pg_class.reltuples``) as last
    read: it moves only when the table is vacuumed or analyzed, and a user's share of it
    (which decides how their vectors are read) needs no fresher one. Read again once
    :attr:`TTL` seconds old."""

    TTL = 60.0

    def __init__(self) -> None:
        self._rows: float | None = None
        self._read_at = 0.0

    def get(self) -> float | None:
        if self._rows is None or time.monotonic() - self._read_at > self.TTL:
            return None
        return self._rows

    def set(self, rows: float) -> None:
        self._rows, self._read_at = rows, time.monotonic()


@dataclass(frozen=True)
class EngineParts:
    """The engine's collaborators (see the module docstring)."""

    db: Database
    embedder: Embedder
    given_counter: TokenCounter | None = None
    """The token counter the engine was given; None: the default, loaded on first use."""
    clock: Clock = utcnow
    episodes: EpisodePolicy = field(default_factory=EpisodePolicy)
    episode_counts: EpisodeCounts = field(default_factory=EpisodeCounts)
    episodes_table: TableEstimate = field(default_factory=TableEstimate)

    @property
    def token_counter(self) -> TokenCounter:
        """The counter in use (the default one is loaded here, once per process)."""
        if self.given_counter is not None:
            return self.given_counter
        return default_token_counter()

    def now(self) -> datetime:
        """The clock's reading, time-zone aware."""
        return aware(self.clock())
