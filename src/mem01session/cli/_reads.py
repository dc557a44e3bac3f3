"""Opening the database for the inspector commands, on psycopg alone (no SQLAlchemy).

The inspector commands (``beliefs list|show|history``, ``episodes list``, ``users``,
``jobs list``) only read, and each is a whole process, which should take well under a
second. Opening the engine's database handle imports SQLAlchemy's asyncio layer (with
the ORM it brings along), a third of a second of CPU or more, about what the rest of
such a command costs. So these commands call the engine's own reads
(:mod:`mem01session.engine.inspection`, :func:`mem01session.queue.job_records.list_jobs`),
which take a :class:`~mem01session.db.direct.DirectPool`, with a pool opened here: the
statements are the engine's, not copies.

The database is opened without SQLAlchemy, Alembic or an embedder when it is at this
library's schema revision (two short queries; the head is read from the migration
scripts). Otherwise (a new database, an older one, one that cannot be reached) it is
opened as every other command opens it (:func:`._open.opened`), which migrates an
embedded database and refuses any other with the usual errors, and the same reads run
on that handle's direct pool (``db.direct``, the pool ``BeliefEngine`` reads on).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, TypeVar

import psycopg

from ..bounded import STALLED, Bound
from ..db import migrate
from ..db.direct import DirectPool
from ..db.urls import with_connect_timeout
from ..engine.inspection import get_belief, user_version
from ..engine.records import Belief
from ..errors import BeliefNotFoundError, DatabaseError
from ..queue.job_records import list_jobs
from ._errors import fail
from ._server import database_url
from ._settings import load_settings

if TYPE_CHECKING:
    from ..config import Settings

T = TypeVar("T")

READ_TIMEOUT_SECONDS = 30.0
"""How long an inspector command waits for the database before it fails and says so (a
table locked elsewhere, as by a migration running, or a server that stopped answering)."""


async def require_user(pool: DirectPool, user: str) -> None:
    """Fail unless the user has durable memory: an applied batch, an erase, or a job."""
    if await user_version(pool, user) > 0:
        return
    if await list_jobs(pool, user_id=user, limit=1):
        return
    fail(f"unknown user {user!r}: no memory recorded for this user")


async def require_belief(pool: DirectPool, user: str, belief_id: int) -> Belief:
    """The user's belief; a missing id and another user's id fail with the same message."""
    try:
        return await get_belief(pool, user, belief_id)
    except BeliefNotFoundError:
        fail(f"no belief #{belief_id} for user {user!r}")


def with_pool(work: Callable[[DirectPool], Awaitable[T]]) -> T:
    """Run ``work`` on a direct pool to the configured database (see the module
    docstring)."""
    settings = load_settings()
    url, embedded = database_url(settings)  # starts the embedded server, saying so
    home = settings.home

    async def revive() -> bool:  # as the database handle does (Database.revive)
        from ..db.embedded import restart_if_stopped

        return await asyncio.to_thread(restart_if_stopped, home)

    async def run() -> T:
        # As Database.open: a server that never answers fails the attempt.
        pool = DirectPool(with_connect_timeout(url), on_connect_error=revive if embedded else None)
        try:
            bound = Bound(READ_TIMEOUT_SECONDS)
            try:
                if await bound.run(_at_head(pool)):
                    return await bound.run(work(pool))
            except TimeoutError:
                if not bound.expired:
                    raise
                fail(f"the database did not answer within {READ_TIMEOUT_SECONDS:g} s ({STALLED})")
        finally:
            await pool.close()
        # Not at head: opened as every command opens it, which may migrate (unbounded).
        return await _opened(work, settings, url, embedded)

    return asyncio.run(run())


async def _at_head(pool: DirectPool) -> bool:
    """Whether the database is at this library's schema revision: False as well when that
    cannot be read (the usual opening then says why)."""
    try:
        _, [(table,)] = await pool.fetch_tuples(migrate.VERSION_TABLE_SQL, {})
        if table is None:
            return False
        _, found = await pool.fetch_tuples(migrate.VERSIONS_SQL, {})
        return migrate.revision_of([r[0] for r in found]) == migrate.head_revision()
    except (psycopg.Error, DatabaseError):
        return False


async def _opened(
    work: Callable[[DirectPool], Awaitable[T]], settings: Settings, url: str, embedded: bool
) -> T:
    from ._open import opened

    async with opened(settings, url, embedded) as (db, _):
        return await work(db.direct)
