"""Per-user bookkeeping shared by every write: the advisory lock, the version, the tombstone."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from ..checks import check_id
from ..errors import UserErasedError
from .parts import EngineParts
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
    tx: Tx, user_id: str, now: datetime, *, episodes: int = 0, active: int = 0
) -> Pending:
    """Count one more applied batch, and the episodes and active beliefs it added (or
    took away); the new version is the ``version`` of the returned statement's one row
    (read it when needed: pipelined, it comes back with later statements)."""
    return await tx.later(
        "UPDATE memory_users SET version = version + 1, updated_at = :now, "
        "episodes = greatest(0, episodes + :episodes), "
        "active_beliefs = greatest(0, active_beliefs + :active) "
        "WHERE user_id = :u RETURNING version",
        {"u": user_id, "now": now, "episodes": episodes, "active": active},
    )


async def erased_at(parts: EngineParts, user_id: str) -> datetime | None:
    """When the user's memory was erased, if it is (the tombstone is not lifted); else None."""
    user_id = check_id("user_id", user_id)
    async with parts.db.sa_engine.connect() as conn:
        moment: datetime | None = await conn.scalar(
            text("SELECT erased_at FROM memory_users WHERE user_id = :u"), {"u": user_id}
        )
    return moment
