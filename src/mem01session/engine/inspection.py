"""Inspection: one belief, the timeline, the ledger, the episodes, the users, a user's
version. Plain reads, no ranking.

Each is a function of a :class:`~mem01session.db.direct.DirectPool` (one autocommit
statement at a time, psycopg's ``%(name)s`` placeholders): ``BeliefEngine`` passes its
database's pool (``db.direct``), and the read-only CLI commands pass one of their own,
opened without SQLAlchemy. So this module imports neither SQLAlchemy nor the rest of the
engine; every statement is the user's own rows (``user_id = ...``) but :func:`users`,
which lists them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..checks import check_filter, check_flag, check_id, check_positive_int, known_timezone
from ..errors import BeliefNotFoundError, EpisodeNotFoundError
from .records import Belief, Episode, LedgerEvent, Source, UserSummary
from .row_mapping import BELIEF_COLUMNS, MAX_BIGINT, belief_from_row, source_from_row

if TYPE_CHECKING:
    from ..db.direct import DirectPool


async def get_belief(pool: DirectPool, user_id: str, belief_id: int) -> Belief:
    """The user's belief ``belief_id`` with its sources (oldest first), in any status."""
    user_id = check_id("user_id", user_id)
    if isinstance(belief_id, bool) or not isinstance(belief_id, int):
        raise BeliefNotFoundError(f"belief ids are ints, got {belief_id!r:.40}")
    if not 1 <= belief_id <= MAX_BIGINT:
        raise BeliefNotFoundError(f"belief #{belief_id} does not exist for this user")
    rows = await pool.fetch(
        f"SELECT {BELIEF_COLUMNS} FROM beliefs WHERE user_id = %(u)s AND id = %(id)s",
        {"u": user_id, "id": belief_id},
    )
    if not rows:
        raise BeliefNotFoundError(f"belief #{belief_id} does not exist for this user")
    sources = await load_sources(pool, user_id, [belief_id])
    return belief_from_row(rows[0], sources.get(belief_id, ()))


async def history(
    pool: DirectPool,
    user_id: str,
    include_inactive: bool = True,
    limit: int = 100,
    contains: str | None = None,
) -> list[Belief]:
    """The user's most recent ``limit`` beliefs with sources, oldest first (valid_from, id).

    With ``contains``: only beliefs whose statement contains it, ignoring case.
    """
    user_id = check_id("user_id", user_id)
    check_positive_int("limit", limit)
    where = "" if check_flag("include_inactive", include_inactive) else "AND status = 'active' "
    q = check_filter("contains", contains)
    if q is not None:
        where += "AND strpos(lower(content), lower(%(q)s)) > 0 "
    rows = await pool.fetch(
        f"SELECT {BELIEF_COLUMNS} FROM beliefs WHERE user_id = %(u)s {where}"
        "ORDER BY valid_from DESC, id DESC LIMIT %(limit)s",
        {"u": user_id, "limit": limit, "q": q},
    )
    sources = await load_sources(pool, user_id, [int(r["id"]) for r in rows])
    return [belief_from_row(r, sources.get(int(r["id"]), ())) for r in reversed(rows)]


async def keyed(pool: DirectPool, user_id: str, limit: int = 50) -> list[Belief]:
    """The user's active beliefs that fill a key slot (``home.city``…), newest first.

    Extractors need them whatever the turn's wording: a new value for a slot replaces the
    old one even when the two share no words.
    """
    user_id = check_id("user_id", user_id)
    check_positive_int("limit", limit)
    rows = await pool.fetch(
        f"SELECT {BELIEF_COLUMNS} FROM beliefs WHERE user_id = %(u)s "
        "AND status = 'active' AND key IS NOT NULL "
        "ORDER BY updated_at DESC, id DESC LIMIT %(limit)s",
        {"u": user_id, "limit": limit},
    )
    return [belief_from_row(r) for r in rows]


async def ledger(
    pool: DirectPool, user_id: str, belief_id: int | None = None, limit: int = 200
) -> list[LedgerEvent]:
    """The user's most recent ``limit`` ledger events, oldest first.

    With ``belief_id``: the events whose subject or related beliefs include it.
    """
    user_id = check_id("user_id", user_id)
    check_positive_int("limit", limit)
    if belief_id is not None:
        check_positive_int("belief_id", belief_id)
    where = (
        ""
        if belief_id is None
        else "AND (belief_id = CAST(%(b)s AS bigint) OR CAST(%(b)s AS bigint) = ANY(related_ids)) "
    )
    rows = await pool.fetch(
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


async def load_sources(
    pool: DirectPool, user_id: str, belief_ids: Sequence[int]
) -> dict[int, list[Source]]:
    """Sources of the given beliefs of the user, oldest first per belief."""
    if not belief_ids:
        return {}
    rows = await pool.fetch(
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


async def user_version(pool: DirectPool, user_id: str) -> int:
    """The user's memory version: bumped by every applied batch and by erase; 0 if unknown."""
    user_id = check_id("user_id", user_id)
    rows = await pool.fetch(
        "SELECT version FROM memory_users WHERE user_id = %(u)s", {"u": user_id}
    )
    return int((rows[0]["version"] if rows else None) or 0)


_USERS = """
SELECT u.user_id, u.version, u.erased_at, u.created_at, u.updated_at, u.episodes,
       u.timezone, coalesce(c.counts, '{}'::jsonb) AS counts
FROM memory_users u
LEFT JOIN LATERAL (
    SELECT jsonb_object_agg(s.status, s.n) AS counts
    FROM (SELECT status, count(*) AS n FROM beliefs b
          WHERE b.user_id = u.user_id GROUP BY status) s
) c ON true
"""


def _summary(row: Mapping[Any, Any]) -> UserSummary:
    return UserSummary(
        user_id=str(row["user_id"]),
        version=int(row["version"]),
        erased_at=row["erased_at"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        beliefs={str(k): int(v) for k, v in row["counts"].items()},
        episodes=int(row["episodes"]),
        timezone=known_timezone(row["timezone"]),
    )


async def users(
    pool: DirectPool, contains: str | None = None, limit: int = 200
) -> list[UserSummary]:
    """Users with durable memory (erased ones included), most recently changed first.

    The one read that spans users: it lists them, each with its own belief counts.
    With ``contains``: only user ids containing it, ignoring case.
    """
    check_positive_int("limit", limit)
    q = check_filter("contains", contains)
    where = "WHERE strpos(lower(u.user_id), lower(%(q)s)) > 0 " if q is not None else ""
    rows = await pool.fetch(
        f"{_USERS}{where}ORDER BY u.updated_at DESC, u.user_id LIMIT %(limit)s",
        {"q": q, "limit": limit},
    )
    return [_summary(r) for r in rows]


async def user_summary(pool: DirectPool, user_id: str) -> UserSummary | None:
    """One user's summary; None if nothing was ever applied to, or erased for, the user."""
    user_id = check_id("user_id", user_id)
    rows = await pool.fetch(f"{_USERS}WHERE u.user_id = %(u)s", {"u": user_id})
    return _summary(rows[0]) if rows else None


_EPISODE_COLUMNS = (
    "e.id, e.user_id, e.session_id, e.job_id, e.message, e.passage, e.role, e.content, "
    "e.said_at, e.item_ref, e.hidden_at, e.context, "
    "ARRAY(SELECT s.belief_id FROM belief_sources s WHERE s.user_id = e.user_id "
    "AND s.episode_id = e.id ORDER BY s.belief_id) AS belief_ids"
)


def _episode(row: Mapping[Any, Any]) -> Episode:
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
        context=row["context"],
    )


async def episodes(
    pool: DirectPool,
    user_id: str,
    session_id: str | None = None,
    limit: int = 100,
    contains: str | None = None,
) -> list[Episode]:
    """The user's most recent ``limit`` episodes (hidden ones included), oldest first, each
    with the beliefs drawn from it; with ``session_id``, one conversation's only; with
    ``contains``, those whose words contain it (ignoring case)."""
    user_id = check_id("user_id", user_id)
    check_positive_int("limit", limit)
    where = ""
    if session_id is not None:
        session_id = check_id("session_id", session_id)
        where += "AND e.session_id = %(s)s "
    q = check_filter("contains", contains)
    if q is not None:
        where += "AND strpos(lower(e.content), lower(%(q)s)) > 0 "
    rows = await pool.fetch(
        f"SELECT {_EPISODE_COLUMNS} FROM episodes e WHERE e.user_id = %(u)s "
        f"{where}ORDER BY e.said_at DESC, e.id DESC LIMIT %(limit)s",
        {"u": user_id, "s": session_id, "q": q, "limit": limit},
    )
    return [_episode(r) for r in reversed(rows)]


async def get_episode(pool: DirectPool, user_id: str, episode_id: int) -> Episode:
    """The user's episode ``episode_id``; :class:`EpisodeNotFoundError` if not the user's."""
    user_id = check_id("user_id", user_id)
    if isinstance(episode_id, bool) or not isinstance(episode_id, int):
        raise EpisodeNotFoundError(f"episode ids are ints, got {episode_id!r:.40}")
    if not 1 <= episode_id <= MAX_BIGINT:
        raise EpisodeNotFoundError(f"episode #{episode_id} does not exist for this user")
    rows = await pool.fetch(
        f"SELECT {_EPISODE_COLUMNS} FROM episodes e WHERE e.user_id = %(u)s AND e.id = %(id)s",
        {"u": user_id, "id": episode_id},
    )
    if not rows:
        raise EpisodeNotFoundError(f"episode #{episode_id} does not exist for this user")
    return _episode(rows[0])
