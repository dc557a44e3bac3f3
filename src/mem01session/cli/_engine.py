"""Running an inspector command: open the engine, run, close; and lookups that fail cleanly.

Imported inside the commands, never at module level: it loads the engine (SQLAlchemy,
psycopg). Errors are not caught here: the root group's handler (:mod:`._errors`) turns
whatever escapes into one line.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

from ..engine import BeliefEngine
from ..engine.records import Belief
from ..errors import BeliefNotFoundError
from ..memory import Memory
from ..queue.jobs import JobStore
from ._errors import fail
from ._settings import load_settings

T = TypeVar("T")

Work = Callable[[BeliefEngine], Awaitable[T]]


def with_engine(work: Work[T]) -> T:
    """Open the configured engine (embedder matching the database), run ``work``, close."""
    settings = load_settings()

    async def run() -> T:
        async with Memory(settings) as memory:
            return await work(await memory.engine())

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
