"""Opening the memory for the inspector commands, without the engine when it can be.

The inspector commands (``beliefs list|show|history``, ``episodes list``, ``users``,
``jobs list``) only read, and each is a whole process, which should take well under a
second. Opening a ``Memory`` imports SQLAlchemy's asyncio layer (with the ORM it brings
along), a third of a second of CPU or more, about what the rest of such a command costs.
So these commands read through a :class:`~mem01session.memory.MemoryReader`: the same
read verbs as ``Memory``'s (:class:`~mem01session.memory.MemoryReads`), on psycopg alone.

That reader is used when the database is at this library's schema revision (two short
queries). Otherwise (a new database, an older one, one that cannot be reached) a
``Memory`` is opened as every other command opens it, which migrates an embedded database
and refuses any other with the usual errors, and the command reads through it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, TypeVar

from ..bounded import STALLED, Bound
from ..errors import BeliefNotFoundError
from ..memory.reader import MemoryReads, reading
from ._errors import fail
from ._server import database_url
from ._settings import load_settings

if TYPE_CHECKING:
    from ..config import Settings
    from ..memory.records import Belief

T = TypeVar("T")

READ_TIMEOUT_SECONDS = 30.0
"""How long an inspector command waits for the database before it fails and says so (a
table locked elsewhere, as by a migration running, or a server that stopped answering)."""

Work = Callable[[MemoryReads], Awaitable[T]]


async def require_user(reads: MemoryReads, user: str) -> None:
    """Fail unless the user has durable memory: an applied batch, an erase, or a job."""
    if not await reads.knows(user):
        fail(f"unknown user {user!r}: no memory recorded for this user")


async def require_belief(reads: MemoryReads, user: str, belief_id: int) -> Belief:
    """The user's belief; a missing id and another user's id fail with the same message."""
    try:
        return await reads.belief(user, belief_id)
    except BeliefNotFoundError:
        fail(f"no belief #{belief_id} for user {user!r}")


def with_reads(work: Work[T]) -> T:
    """Run ``work`` on the configured memory's reads (see the module docstring)."""
    settings = load_settings()
    url, embedded = database_url(settings)  # starts the embedded server, saying so
    home = settings.home if embedded else None

    async def fast() -> tuple[bool, T | None]:
        async with reading(url, home=home) as reader:
            if reader is None:
                return False, None
            return True, await work(reader)

    async def run() -> T:
        bound = Bound(READ_TIMEOUT_SECONDS)
        try:
            done, value = await bound.run(fast())
        except TimeoutError:
            if not bound.expired:
                raise
            fail(f"the database did not answer within {READ_TIMEOUT_SECONDS:g} s ({STALLED})")
        if done:
            return value  # type: ignore[return-value]  # done: work's own result
        # Not at head: opened as every command opens it, which may migrate (unbounded).
        return await _opened(work, settings)

    return asyncio.run(run())


async def _opened(work: Work[T], settings: Settings) -> T:
    from ..memory import Memory

    async with await Memory.open(settings, run_worker=False) as memory:
        return await work(memory)
