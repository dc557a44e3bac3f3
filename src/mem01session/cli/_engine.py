"""Running an inspector command: open the engine, run, close; and lookups that fail cleanly.

Imported inside the commands, never at module level: it loads the engine (SQLAlchemy,
psycopg). The engine is opened as ``Memory`` opens it (same embedder, database and
episode policy) but without ``Memory`` itself, whose extractor and worker would load the
OpenAI client and the Agents SDK, a second or more that no inspector command uses.
Errors are not caught here: the root group's handler (:mod:`._errors`) turns whatever
escapes into one line.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import TypeVar

from ..db import Database
from ..embeddings import default_embedder
from ..engine import BeliefEngine
from ..engine.episodes import EpisodePolicy
from ..engine.records import Belief
from ..errors import BeliefNotFoundError
from ..queue.jobs import JobStore
from ._errors import fail
from ._server import database_url
from ._settings import load_settings

T = TypeVar("T")

Work = Callable[[BeliefEngine], Awaitable[T]]


def with_engine(work: Work[T]) -> T:
    """Open the configured engine (embedder matching the database), run ``work``, close."""
    settings = load_settings()
    url, embedded = database_url(settings)  # starts the embedded server, saying so

    async def run() -> T:
        embedder = default_embedder(settings)
        try:
            db = await Database.open(
                None if embedded else url,  # embedded: opened (and migrated) by home
                home=settings.home,
                embedding_model=embedder.name,
                embedding_dim=embedder.dim,
            )
            try:
                policy = EpisodePolicy(settings.episodes, settings.episode_retention_days)
                return await work(BeliefEngine(db, embedder, episodes=policy))
            finally:
                await db.close()
        finally:
            close = getattr(embedder, "aclose", None)  # a server's embedder: its client
            if close is not None:
                with contextlib.suppress(Exception):
                    await close()

    return asyncio.run(run())


async def require_user(engine: BeliefEngine, user: str) -> None:
    """Fail unless the user has durable memory: an applied batch, an erase, or a job."""
    if await engine.user_version(user) > 0:
        return
    if await JobStore(engine.db).list_jobs(user_id=user, limit=1):
        return
    fail(f"unknown user {user!r}: no memory recorded for this user")


async def require_belief(engine: BeliefEngine, user: str, belief_id: int) -> Belief:
    """The user's belief; a missing id and another user's id fail with the same message."""
    try:
        return await engine.get(user, belief_id)
    except BeliefNotFoundError:
        fail(f"no belief #{belief_id} for user {user!r}")
