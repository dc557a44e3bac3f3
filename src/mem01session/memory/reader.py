"""Reading a memory: :class:`MemoryReader`, the read verbs on a database connection pool.

:class:`~mem01session.memory.Memory` answers its reads with one (on the pool its engine
reads on). A process that only reads, such as an inspector command, can open one
without the engine with :func:`reading`: psycopg alone, no SQLAlchemy, no embedder, so
that the command takes a fraction of a second. Both satisfy :class:`MemoryReads`.

Every read is one user's rows, but :meth:`MemoryReader.users` (which lists them) and
:meth:`MemoryReader.jobs` without a user (the operator's view of the queue).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Protocol

import psycopg

from ..checks import check_id
from ..db import migrate, versions
from ..db.direct import DirectPool
from ..db.urls import with_connect_timeout
from ..engine import inspection
from ..engine.records import Belief, Episode, LedgerEvent, UserSummary
from ..errors import DatabaseError
from ..queue.job_records import Job, list_jobs
from .schema import SchemaStatus


class MemoryReads(Protocol):
    """The read verbs, as :class:`MemoryReader` and ``Memory`` both offer them."""

    async def users(
        self, *, contains: str | None = None, limit: int = 200
    ) -> list[UserSummary]: ...

    async def user(self, user_id: str) -> UserSummary | None: ...

    async def knows(self, user_id: str) -> bool: ...

    async def beliefs(
        self,
        user_id: str,
        *,
        include_inactive: bool = False,
        contains: str | None = None,
        limit: int = 100,
    ) -> list[Belief]: ...

    async def belief(self, user_id: str, belief_id: int) -> Belief: ...

    async def history(
        self, user_id: str, *, belief_id: int | None = None, limit: int = 200
    ) -> list[LedgerEvent]: ...

    async def episodes(
        self,
        user_id: str,
        *,
        session_id: str | None = None,
        contains: str | None = None,
        limit: int = 100,
    ) -> list[Episode]: ...

    async def episode(self, user_id: str, episode_id: int) -> Episode: ...

    async def jobs(
        self, *, user_id: str | None = None, status: str | None = None, limit: int = 100
    ) -> list[Job]: ...

    async def schema_status(self) -> SchemaStatus: ...


class MemoryReader:
    """The read verbs on ``pool`` (a database at this library's schema)."""

    def __init__(self, pool: DirectPool) -> None:
        self._pool = pool

    def __repr__(self) -> str:
        return f"MemoryReader({self._pool!r})"

    async def users(self, *, contains: str | None = None, limit: int = 200) -> list[UserSummary]:
        """Users with durable memory, erased ones included, most recently changed first;
        with ``contains``, only user ids containing it (ignoring case)."""
        return await inspection.users(self._pool, contains, limit)

    async def user(self, user_id: str) -> UserSummary | None:
        """The user's summary (version, erase tombstone, belief counts); None if unknown."""
        return await inspection.user_summary(self._pool, user_id)

    async def knows(self, user_id: str) -> bool:
        """Whether anything durable was recorded for the user: an applied turn, an erase,
        or a job (a turn waiting for the worker)."""
        if await inspection.user_version(self._pool, user_id) > 0:
            return True
        return bool(await list_jobs(self._pool, user_id=check_id("user_id", user_id), limit=1))

    async def beliefs(
        self,
        user_id: str,
        *,
        include_inactive: bool = False,
        contains: str | None = None,
        limit: int = 100,
    ) -> list[Belief]:
        """The user's most recent ``limit`` beliefs with their sources, oldest first: the
        current ones, or with ``include_inactive`` also those superseded, invalidated or
        merged; with ``contains``, those whose statement contains it (ignoring case)."""
        return await inspection.history(self._pool, user_id, include_inactive, limit, contains)

    async def belief(self, user_id: str, belief_id: int) -> Belief:
        """One belief of the user, in any status, with its sources;
        :class:`~mem01session.errors.BeliefNotFoundError` if it is not the user's."""
        return await inspection.get_belief(self._pool, user_id, belief_id)

    async def history(
        self, user_id: str, *, belief_id: int | None = None, limit: int = 200
    ) -> list[LedgerEvent]:
        """What changed in the user's memory, oldest first: the ledger's events (op,
        before and after, reason, job); with ``belief_id``, those of that belief."""
        return await inspection.ledger(self._pool, user_id, belief_id, limit)

    async def episodes(
        self,
        user_id: str,
        *,
        session_id: str | None = None,
        contains: str | None = None,
        limit: int = 100,
    ) -> list[Episode]:
        """What the user said, dated, oldest first (hidden ones included), each with the
        beliefs drawn from it; with ``session_id``, one conversation's; with
        ``contains``, those whose words contain it (ignoring case)."""
        return await inspection.episodes(self._pool, user_id, session_id, limit, contains)

    async def episode(self, user_id: str, episode_id: int) -> Episode:
        """One episode of the user; :class:`~mem01session.errors.EpisodeNotFoundError` if
        it is not the user's."""
        return await inspection.get_episode(self._pool, user_id, episode_id)

    async def jobs(
        self, *, user_id: str | None = None, status: str | None = None, limit: int = 100
    ) -> list[Job]:
        """Extraction jobs, newest first (never the text of their turns in a repr),
        optionally one user's or in one status (``pending``, ``running``, ``done``,
        ``failed``)."""
        if user_id is not None:
            user_id = check_id("user_id", user_id)
        return await list_jobs(self._pool, user_id=user_id, status=status, limit=limit)

    async def schema_status(self) -> SchemaStatus:
        """The revision the database is at, and this library's newest."""
        _, [(own, legacy)] = await self._pool.fetch_tuples(versions.VERSION_TABLE_SQL, {})
        revision = None
        if own:
            _, found = await self._pool.fetch_tuples(versions.VERSIONS_SQL, {})
            revision = versions.revision_of([r[0] for r in found])
        elif legacy:
            _, found = await self._pool.fetch_tuples(versions.LEGACY_VERSIONS_SQL, {})
            revision = versions.legacy_revision_of([r[0] for r in found])
        return SchemaStatus(revision, migrate.head_revision())


@asynccontextmanager
async def reading(url: str, *, home: Path | None = None) -> AsyncIterator[MemoryReader | None]:
    """A reader on the database at ``url``, opened without the engine, if that database
    is at this library's schema revision (None: it is not, or that cannot be read; open a
    ``Memory`` instead, which migrates or says why not). ``home``: the embedded server's
    folder when ``url`` is its, restarted if it stopped meanwhile."""

    async def revive() -> bool:  # as the database handle does (Database.revive)
        from ..db.embedded import restart_if_stopped

        assert home is not None
        return await asyncio.to_thread(restart_if_stopped, home)

    pool = DirectPool(
        with_connect_timeout(url), on_connect_error=revive if home is not None else None
    )
    try:
        yield MemoryReader(pool) if await _at_head(pool) else None
    finally:
        await pool.close()


async def _at_head(pool: DirectPool) -> bool:
    """Whether the database is at this library's schema revision: False as well when that
    cannot be read (opening a ``Memory`` then says why)."""
    try:
        return (await MemoryReader(pool).schema_status()).at_head
    except (psycopg.Error, DatabaseError):
        return False


__all__ = ["MemoryReader", "MemoryReads", "reading"]
