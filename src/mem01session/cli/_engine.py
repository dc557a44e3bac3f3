"""Running a command on the engine: open it, run, close; and lookups that fail cleanly.

For the commands that change memory or recall it; those that only read it (the inspector
commands) call the engine's reads on a pool opened by :mod:`._reads`, without SQLAlchemy.
Imported inside the commands, never at module level: it loads the engine (SQLAlchemy,
psycopg). The engine is opened as ``Memory`` opens it (same embedder, database and
episode policy) but without ``Memory`` itself, whose extractor and worker would load the
OpenAI client and the Agents SDK, a second or more that no inspector command uses.
Errors are not caught here: the root group's handler (:mod:`._errors`) turns whatever
escapes into one line.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

from ..engine import BeliefEngine
from ..engine.episodes import EpisodePolicy
from ..engine.records import Belief
from . import _reads as reads
from ._open import opened
from ._server import database_url
from ._settings import load_settings

T = TypeVar("T")

Work = Callable[[BeliefEngine], Awaitable[T]]


def with_engine(work: Work[T]) -> T:
    """Open the configured engine (embedder matching the database), run ``work``, close."""
    settings = load_settings()
    url, embedded = database_url(settings)  # starts the embedded server, saying so

    async def run() -> T:
        async with opened(settings, url, embedded) as (db, embedder):
            policy = EpisodePolicy(settings.episodes, settings.episode_retention_days)
            return await work(BeliefEngine(db, embedder, episodes=policy))

    return asyncio.run(run())


async def require_user(engine: BeliefEngine, user: str) -> None:
    """Fail unless the user has durable memory (:func:`._reads.require_user`)."""
    await reads.require_user(engine.db.direct, user)


async def require_belief(engine: BeliefEngine, user: str, belief_id: int) -> Belief:
    """The user's belief; a missing id and another user's id fail with the same message."""
    return await reads.require_belief(engine.db.direct, user, belief_id)
