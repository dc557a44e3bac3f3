"""Per-user bookkeeping shared by every write: the id check, the advisory lock, the version."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from ..errors import ConfigError, UserErasedError

if TYPE_CHECKING:
    from .core import BeliefEngine

MAX_USER_ID_CHARS = 200

# A 64-bit key per user: different users practically never share a lock.
_LOCK_SQL = text("SELECT pg_advisory_xact_lock(hashtextextended('mem01:user:' || :u, 0))")


def is_utf8(text: str) -> bool:
    """Whether ``text`` can be stored: no lone surrogates (PostgreSQL takes UTF-8 only)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def check_user_id(user_id: object) -> str:
    """Return ``user_id`` if it is usable as a user key; :class:`ConfigError` otherwise."""
    if not isinstance(user_id, str):
        raise ConfigError(f"user_id must be a string, got {type(user_id).__name__}")
    if not user_id.strip():
        raise ConfigError("user_id is empty")
    if "\x00" in user_id:
        raise ConfigError("user_id contains a NUL byte")
    if not is_utf8(user_id):
        raise ConfigError("user_id is not valid UTF-8 (it holds a lone surrogate)")
    if len(user_id) > MAX_USER_ID_CHARS:
        raise ConfigError(
            f"user_id is {len(user_id)} characters, over the limit of {MAX_USER_ID_CHARS}"
        )
    return user_id


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


async def user_version(engine: BeliefEngine, user_id: str) -> int:
    """The user's memory version: bumped by every applied batch and by erase; 0 if unknown."""
    user_id = check_user_id(user_id)
    async with engine.db.engine.connect() as conn:
        version = await conn.scalar(
            text("SELECT version FROM memory_users WHERE user_id = :u"), {"u": user_id}
        )
    return int(version or 0)
