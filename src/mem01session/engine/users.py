"""Per-user bookkeeping shared by every write: the advisory lock, the version, the tombstone."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from ..checks import check_id
from ..errors import UserErasedError
from .parts import EngineParts

# A 64-bit key per user: different users practically never share a lock.
_LOCK_SQL = text("SELECT pg_advisory_xact_lock(hashtextextended('mem01:user:' || :u, 0))")


async def lock_user(conn: AsyncConnection, user_id: str) -> None:
    """Wait for the user's write lock; it is held until ``conn``'s transaction ends.

    Any process writing a user's durable memory must take this lock first.
    """
    await conn.execute(_LOCK_SQL, {"u": user_id})


async def open_user(conn: AsyncConnection, user_id: str, now: datetime) -> int:
    """Register the user if new and return their version; refuse an erased user.

    Call under the user's lock.
    """
    await conn.execute(
        text(
            "INSERT INTO memory_users (user_id, created_at, updated_at) VALUES (:u, :now, :now) "
            "ON CONFLICT (user_id) DO NOTHING"
        ),
        {"u": user_id, "now": now},
    )
    row = (
        await conn.execute(
            text("SELECT version, erased_at FROM memory_users WHERE user_id = :u"), {"u": user_id}
        )
    ).one()
    if row.erased_at is not None:
        raise UserErasedError(
            "this user's memory was erased; writes are refused until the user is reinstated"
        )
    return int(row.version)


async def bump_version(conn: AsyncConnection, user_id: str, now: datetime) -> int:
    """Count one more applied batch; returns the new version."""
    version = await conn.scalar(
        text(
            "UPDATE memory_users SET version = version + 1, updated_at = :now "
            "WHERE user_id = :u RETURNING version"
        ),
        {"u": user_id, "now": now},
    )
    return int(version)


async def user_version(parts: EngineParts, user_id: str) -> int:
    """The user's memory version: bumped by every applied batch and by erase; 0 if unknown."""
    user_id = check_id("user_id", user_id)
    async with parts.db.sa_engine.connect() as conn:
        version = await conn.scalar(
            text("SELECT version FROM memory_users WHERE user_id = :u"), {"u": user_id}
        )
    return int(version or 0)


async def erased_at(parts: EngineParts, user_id: str) -> datetime | None:
    """When the user's memory was erased, if it is (the tombstone is not lifted); else None."""
    user_id = check_id("user_id", user_id)
    async with parts.db.sa_engine.connect() as conn:
        moment: datetime | None = await conn.scalar(
            text("SELECT erased_at FROM memory_users WHERE user_id = :u"), {"u": user_id}
        )
    return moment
