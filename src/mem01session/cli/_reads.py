"""Reading memory for the inspector commands, on psycopg alone (no SQLAlchemy).

The inspector commands (``beliefs list|show|history``, ``episodes list``, ``users``,
``jobs list``) only read, and each is a whole process, which should take well under a
second. The engine's reads go through SQLAlchemy's asyncio layer, whose import (with the
ORM it brings along) costs a third of a second of CPU or more, about what the rest of
such a command costs. So these commands read through a
:class:`~mem01session.db.direct.DirectPool` with the engine's statements
(:mod:`mem01session.engine.inspection`, ``user_version`` in
:mod:`mem01session.engine.users`, ``JobStore.list_jobs`` in
:mod:`mem01session.queue.jobs`), written with psycopg's placeholders, and get the
engine's records back. ``tests/cli/test_reads.py`` checks that both give the same records
from the same database: a change to one of those statements belongs in both.

The database is opened without SQLAlchemy, Alembic or an embedder when it is at this
library's schema revision (two short queries; the head is read from the migration
scripts). Otherwise (a new database, an older one, one that cannot be reached) it is
opened as every other command opens it (:func:`._open.opened`), which migrates an
embedded database and refuses any other with the usual errors, and the same reads run
on that handle's direct pool.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import psycopg

from ..checks import check_filter, check_id, check_positive_int
from ..db import migrate
from ..db.direct import DirectPool
from ..engine.records import Belief, Episode, LedgerEvent, Source, UserSummary
from ..engine.rows import BELIEF_COLUMNS, MAX_BIGINT, belief_from_row, source_from_row
from ..errors import BeliefNotFoundError, DatabaseError, EpisodeNotFoundError
from ..queue.job_records import JOB_COLUMNS, Job, job_from_row
from ._errors import fail
from ._server import database_url
from ._settings import load_settings

if TYPE_CHECKING:
    from ..config import Settings

T = TypeVar("T")


class Reader:
    """The engine's inspection reads (same arguments, checks, statements and records) on
    a direct pool."""

    def __init__(self, pool: DirectPool) -> None:
        self.pool = pool

    async def user_version(self, user_id: str) -> int:
        """As ``BeliefEngine.user_version``: 0 for an unknown user."""
        user_id = check_id("user_id", user_id)
        rows = await self.pool.fetch(
            "SELECT version FROM memory_users WHERE user_id = %(u)s", {"u": user_id}
        )
        return int((rows[0]["version"] if rows else None) or 0)

    async def get(self, user_id: str, belief_id: int) -> Belief:
        """As ``BeliefEngine.get``: :class:`BeliefNotFoundError` if not the user's."""
        user_id = check_id("user_id", user_id)
        if isinstance(belief_id, bool) or not isinstance(belief_id, int):
            raise BeliefNotFoundError(f"belief ids are ints, got {belief_id!r:.40}")
        if not 1 <= belief_id <= MAX_BIGINT:
            raise BeliefNotFoundError(f"belief #{belief_id} does not exist for this user")
        rows = await self.pool.fetch(
            f"SELECT {BELIEF_COLUMNS} FROM beliefs WHERE user_id = %(u)s AND id = %(id)s",
            {"u": user_id, "id": belief_id},
        )
        if not rows:
            raise BeliefNotFoundError(f"belief #{belief_id} does not exist for this user")
        sources = await self._sources(user_id, [belief_id])
        return belief_from_row(rows[0], sources.get(belief_id, ()))

    async def history(
        self,
        user_id: str,
        *,
        include_inactive: bool = True,
        limit: int = 100,
        contains: str | None = None,
    ) -> list[Belief]:
        """As ``BeliefEngine.history``: the most recent ``limit`` beliefs, oldest first."""
        user_id = check_id("user_id", user_id)
        check_positive_int("limit", limit)
        where = "" if include_inactive else "AND status = 'active' "
        q = check_filter("contains", contains)
        if q is not None:
            where += "AND strpos(lower(content), lower(%(q)s)) > 0 "
        rows = await self.pool.fetch(
            f"SELECT {BELIEF_COLUMNS} FROM beliefs WHERE user_id = %(u)s {where}"
            "ORDER BY valid_from DESC, id DESC LIMIT %(limit)s",
            {"u": user_id, "limit": limit, "q": q},
        )
        sources = await self._sources(user_id, [int(r["id"]) for r in rows])
        return [belief_from_row(r, sources.get(int(r["id"]), ())) for r in reversed(rows)]

    async def ledger(
        self, user_id: str, *, belief_id: int | None = None, limit: int = 200
    ) -> list[LedgerEvent]:
        """As ``BeliefEngine.ledger``: the most recent ``limit`` events, oldest first."""
        user_id = check_id("user_id", user_id)
        check_positive_int("limit", limit)
        where = (
            ""
            if belief_id is None
            else "AND (belief_id = CAST(%(b)s AS bigint) "
            "OR CAST(%(b)s AS bigint) = ANY(related_ids)) "
        )
        rows = await self.pool.fetch(
            "SELECT id, op, belief_id, related_ids, before, after, reason, job_id, "
            f"created_at FROM belief_events WHERE user_id = %(u)s {where}"
            "ORDER BY id DESC LIMIT %(limit)s",
            {"u": user_id, "b": belief_id, "limit": limit},
        )
        return [
            LedgerEvent(
                id=int(r["id"]),
                op=str(r["op"]),
                belief_id=r["belief_id"],
                related_ids=tuple(int(i) for i in r["related_ids"]),
                before=r["before"],
                after=r["after"],
                reason=r["reason"],
                job_id=r["job_id"],
                created_at=r["created_at"],
            )
            for r in reversed(rows)
        ]

    async def _sources(self, user_id: str, belief_ids: Sequence[int]) -> dict[int, list[Source]]:
        if not belief_ids:
            return {}
        rows = await self.pool.fetch(
            "SELECT belief_id, session_id, item_ref, evidence, observed_at, extractor, job_id, "
            "episode_id FROM belief_sources "
            "WHERE user_id = %(u)s AND belief_id = ANY(CAST(%(ids)s AS bigint[])) "
            "ORDER BY observed_at, id",
            {"u": user_id, "ids": list(belief_ids)},
        )
        out: dict[int, list[Source]] = {}
        for row in rows:
            out.setdefault(int(row["belief_id"]), []).append(source_from_row(row))
        return out

    async def users(self, *, contains: str | None = None, limit: int = 200) -> list[UserSummary]:
        """As ``BeliefEngine.users``: most recently changed first."""
        check_positive_int("limit", limit)
        q = check_filter("contains", contains)
        where = "WHERE strpos(lower(u.user_id), lower(%(q)s)) > 0 " if q is not None else ""
        rows = await self.pool.fetch(
            f"{_USERS}{where}ORDER BY u.updated_at DESC, u.user_id LIMIT %(limit)s",
            {"q": q, "limit": limit},
        )
        return [_summary(r) for r in rows]

    async def episodes(
        self,
        user_id: str,
        *,
        session_id: str | None = None,
        limit: int = 100,
        contains: str | None = None,
    ) -> list[Episode]:
        """As ``BeliefEngine.episodes``: the most recent ``limit`` episodes, oldest first."""
        user_id = check_id("user_id", user_id)
        check_positive_int("limit", limit)
        where = ""
        if session_id is not None:
            session_id = check_id("session_id", session_id)
            where += "AND e.session_id = %(s)s "
        q = check_filter("contains", contains)
        if q is not None:
            where += "AND strpos(lower(e.content), lower(%(q)s)) > 0 "
        rows = await self.pool.fetch(
            f"SELECT {_EPISODE_COLUMNS} FROM episodes e WHERE e.user_id = %(u)s "
            f"{where}ORDER BY e.said_at DESC, e.id DESC LIMIT %(limit)s",
            {"u": user_id, "s": session_id, "q": q, "limit": limit},
        )
        return [_episode(r) for r in reversed(rows)]

    async def episode(self, user_id: str, episode_id: int) -> Episode:
        """As ``BeliefEngine.episode``: :class:`EpisodeNotFoundError` if not the user's."""
        user_id = check_id("user_id", user_id)
        if isinstance(episode_id, bool) or not isinstance(episode_id, int):
            raise EpisodeNotFoundError(f"episode ids are ints, got {episode_id!r:.40}")
        if not 1 <= episode_id <= MAX_BIGINT:
            raise EpisodeNotFoundError(f"episode #{episode_id} does not exist for this user")
        rows = await self.pool.fetch(
            f"SELECT {_EPISODE_COLUMNS} FROM episodes e WHERE e.user_id = %(u)s AND e.id = %(id)s",
            {"u": user_id, "id": episode_id},
        )
        if not rows:
            raise EpisodeNotFoundError(f"episode #{episode_id} does not exist for this user")
        return _episode(rows[0])

    async def list_jobs(
        self, *, user_id: str | None = None, status: str | None = None, limit: int = 100
    ) -> list[Job]:
        """As ``JobStore.list_jobs``: newest first, optionally one user's or one status'."""
        clauses = []
        params: dict[str, Any] = {"limit": limit}
        if user_id is not None:
            clauses.append("user_id = %(u)s")
            params["u"] = user_id
        if status is not None:
            clauses.append("status = %(status)s")
            params["status"] = status
        where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
        rows = await self.pool.fetch(
            f"SELECT {JOB_COLUMNS} FROM memory_jobs {where} ORDER BY id DESC LIMIT %(limit)s",
            params,
        )
        return [job_from_row(r) for r in rows]


_USERS = """
SELECT u.user_id, u.version, u.erased_at, u.created_at, u.updated_at, u.episodes,
       coalesce(c.counts, '{}'::jsonb) AS counts
FROM memory_users u
LEFT JOIN LATERAL (
    SELECT jsonb_object_agg(s.status, s.n) AS counts
    FROM (SELECT status, count(*) AS n FROM beliefs b
          WHERE b.user_id = u.user_id GROUP BY status) s
) c ON true
"""


def _summary(row: Mapping[str, Any]) -> UserSummary:
    return UserSummary(
        user_id=str(row["user_id"]),
        version=int(row["version"]),
        erased_at=row["erased_at"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        beliefs={str(k): int(v) for k, v in row["counts"].items()},
        episodes=int(row["episodes"]),
    )


_EPISODE_COLUMNS = (
    "e.id, e.user_id, e.session_id, e.job_id, e.message, e.passage, e.role, e.content, "
    "e.said_at, e.item_ref, e.hidden_at, "
    "ARRAY(SELECT s.belief_id FROM belief_sources s WHERE s.user_id = e.user_id "
    "AND s.episode_id = e.id ORDER BY s.belief_id) AS belief_ids"
)


def _episode(row: Mapping[str, Any]) -> Episode:
    return Episode(
        id=int(row["id"]),
        user_id=str(row["user_id"]),
        session_id=str(row["session_id"]),
        job_id=int(row["job_id"]),
        message=int(row["message"]),
        passage=int(row["passage"]),
        role=row["role"],
        content=str(row["content"]),
        said_at=row["said_at"],
        item_ref=row["item_ref"],
        hidden_at=row["hidden_at"],
        belief_ids=tuple(int(b) for b in row["belief_ids"] or ()),
    )


async def require_user(reader: Reader, user: str) -> None:
    """Fail unless the user has durable memory: an applied batch, an erase, or a job."""
    if await reader.user_version(user) > 0:
        return
    if await reader.list_jobs(user_id=user, limit=1):
        return
    fail(f"unknown user {user!r}: no memory recorded for this user")


async def require_belief(reader: Reader, user: str, belief_id: int) -> Belief:
    """The user's belief; a missing id and another user's id fail with the same message."""
    try:
        return await reader.get(user, belief_id)
    except BeliefNotFoundError:
        fail(f"no belief #{belief_id} for user {user!r}")


def with_reader(work: Callable[[Reader], Awaitable[T]]) -> T:
    """Run ``work`` on the configured database (see the module docstring)."""
    settings = load_settings()
    url, embedded = database_url(settings)  # starts the embedded server, saying so
    home = settings.home

    async def revive() -> bool:  # as the database handle does (Database.revive)
        from ..db.embedded import restart_if_stopped

        return await asyncio.to_thread(restart_if_stopped, home)

    async def run() -> T:
        pool = DirectPool(url, on_connect_error=revive if embedded else None)
        try:
            if await _at_head(pool):
                return await work(Reader(pool))
        finally:
            await pool.close()
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
    work: Callable[[Reader], Awaitable[T]], settings: Settings, url: str, embedded: bool
) -> T:
    from ._open import opened

    async with opened(settings, url, embedded) as (db, _):
        return await work(Reader(db.direct))
