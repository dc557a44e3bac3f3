"""Per-user bookkeeping shared by every write: the advisory lock, the version, the tombstone."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Literal
from zoneinfo import ZoneInfo

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from ..checks import check_id, known_timezone
from ..errors import UserErasedError
from .engine_parts import EngineParts
from .tx import Pending, Tx

# A 64-bit key per user: different users practically never share a lock.
_LOCK_SQL = "SELECT pg_advisory_xact_lock(hashtextextended('mem01:user:' || :u, 0))"
# Registers a new user and reads the user's row, in one statement (under the lock).
_OPEN_SQL = (
    "WITH new AS (INSERT INTO memory_users (user_id, created_at, updated_at) "
    "VALUES (:u, :now, :now) ON CONFLICT (user_id) DO NOTHING RETURNING version, erased_at) "
    "SELECT version, erased_at FROM new UNION ALL "
    "SELECT version, erased_at FROM memory_users WHERE user_id = :u "
    "AND NOT EXISTS (SELECT 1 FROM new)"
)

# Several users' locks, always taken in the order of their keys: two transactions that
# lock groups of users never wait for each other in a circle. (DISTINCT keeps the
# subquery from being flattened, so the locks are taken in its order.)
_LOCK_MANY_SQL = (
    "SELECT pg_advisory_xact_lock(k) FROM (SELECT DISTINCT "
    "hashtextextended('mem01:user:' || u, 0) AS k FROM unnest(CAST(:users AS text[])) AS u "
    "ORDER BY k) AS keys"
)
_OPEN_MANY_SQL = (
    "WITH want AS (SELECT DISTINCT u FROM unnest(CAST(:users AS text[])) AS u), "
    "new AS (INSERT INTO memory_users (user_id, created_at, updated_at) "
    "SELECT u, :now, :now FROM want ON CONFLICT (user_id) DO NOTHING "
    "RETURNING user_id, version, erased_at) "
    "SELECT user_id, version, erased_at FROM new UNION ALL "
    "SELECT m.user_id, m.version, m.erased_at FROM memory_users m JOIN want ON m.user_id = want.u "
    "WHERE m.user_id NOT IN (SELECT user_id FROM new)"
)
_BUMP_MANY_SQL = (
    "UPDATE memory_users m SET version = m.version + 1, updated_at = :now, "
    "episodes = greatest(0, m.episodes + d.e), "
    "active_beliefs = greatest(0, m.active_beliefs + d.a), "
    "timezone = coalesce(d.z, m.timezone) "
    "FROM unnest(CAST(:users AS text[]), CAST(:episodes AS integer[]), "
    "CAST(:active AS integer[]), CAST(:zones AS text[])) AS d(u, e, a, z) "
    "WHERE m.user_id = d.u RETURNING m.user_id, m.version"
)


async def lock_user(conn: Tx | AsyncConnection, user_id: str) -> None:
    """Wait for the user's write lock; it is held until ``conn``'s transaction ends.

    Any process writing a user's durable memory must take this lock first.
    """
    tx = conn if isinstance(conn, Tx) else await Tx.of(conn)
    await tx.run(_LOCK_SQL, {"u": user_id})


async def open_user(tx: Tx, user_id: str, now: datetime) -> Pending:
    """Register the user if new (call under the user's lock); :func:`opened` reads the
    returned statement: the user's version, or the refusal of an erased user. Pipelined,
    its row comes back with the next statement whose rows are read."""
    return await tx.later(_OPEN_SQL, {"u": user_id, "now": now})


async def opened(user: Pending) -> int:
    """The version of the user :func:`open_user` opened; refuses an erased user."""
    row = await user.one()
    if row["erased_at"] is not None:
        raise UserErasedError(
            "this user's memory was erased; writes are refused until the user is reinstated"
        )
    return int(row["version"])


async def bump_version(
    tx: Tx,
    user_id: str,
    now: datetime,
    *,
    episodes: int = 0,
    active: int = 0,
    timezone: str | None = None,
) -> Pending:
    """Count one more applied batch, and the episodes and active beliefs it added (or
    took away); record the user's ``timezone`` if the batch's turn named one (see
    :func:`zone_of`). The new version is the ``version`` of the returned statement's one
    row (read it when needed: pipelined, it comes back with later statements)."""
    return await tx.later(
        "UPDATE memory_users SET version = version + 1, updated_at = :now, "
        "episodes = greatest(0, episodes + :episodes), "
        "active_beliefs = greatest(0, active_beliefs + :active), "
        "timezone = coalesce(:zone, timezone) "
        "WHERE user_id = :u RETURNING version",
        {"u": user_id, "now": now, "episodes": episodes, "active": active, "zone": timezone},
    )


def zone_of(observed_at: datetime | None) -> str | None:
    """The IANA zone a turn was stamped in (its session's ``timezone``), if it names one:
    a turn stamped in UTC or a fixed offset says nothing of the user's zone."""
    zone = observed_at.tzinfo if observed_at is not None else None
    return zone.key if isinstance(zone, ZoneInfo) and zone.key != "UTC" else None


async def lock_users(tx: Tx, user_ids: Sequence[str]) -> None:
    """:func:`lock_user` for several users, in an order every caller shares."""
    await tx.run(_LOCK_MANY_SQL, {"users": list(user_ids)})


async def open_users(tx: Tx, user_ids: Sequence[str], now: datetime) -> Pending:
    """:func:`open_user` for several users; :func:`opened_users` reads it."""
    return await tx.later(_OPEN_MANY_SQL, {"users": list(user_ids), "now": now})


async def opened_users(users: Pending) -> dict[str, int]:
    """The versions of the users :func:`open_users` opened; refuses if one was erased."""
    versions = {}
    for row in await users.rows():
        if row["erased_at"] is not None:
            raise UserErasedError(f"user {row['user_id']!r}'s memory was erased")
        versions[str(row["user_id"])] = int(row["version"])
    return versions


async def bump_versions(
    tx: Tx, now: datetime, counts: Mapping[str, tuple[int, int, str | None]]
) -> Pending:
    """:func:`bump_version` for several users: ``counts`` maps each to the episodes and
    active beliefs its batch added and the zone its turn named; the rows' ``user_id`` and
    new ``version``."""
    users = list(counts)
    return await tx.later(
        _BUMP_MANY_SQL,
        {
            "users": users,
            "now": now,
            "episodes": [counts[u][0] for u in users],
            "active": [counts[u][1] for u in users],
            "zones": [counts[u][2] for u in users],
        },
    )


async def stored_timezone(parts: EngineParts, user_id: str) -> str | None:
    """The IANA zone the user's sessions last gave (:func:`zone_of`), or None."""
    return known_timezone(await _column(parts, user_id, "timezone"))


async def erased_at(parts: EngineParts, user_id: str) -> datetime | None:
    """When the user's memory was erased, if it is (the tombstone is not lifted); else None."""
    moment: datetime | None = await _column(parts, user_id, "erased_at")
    return moment


async def _column(
    parts: EngineParts, user_id: str, column: Literal["timezone", "erased_at"]
) -> Any:
    """One column of the user's row."""
    user_id = check_id("user_id", user_id)
    async with parts.db.sa_engine.connect() as conn:
        return await conn.scalar(
            text(f"SELECT {column} FROM memory_users WHERE user_id = :u"), {"u": user_id}
        )
