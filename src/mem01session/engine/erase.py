"""Erase: hard-delete a user's durable memory in one transaction and leave a tombstone."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import text

from ..checks import check_id
from ..db.schema import USER_TABLES
from .parts import EngineParts
from .records import EraseReceipt
from .render import forget_rendered
from .users import lock_user

# Every user-scoped table but the one holding the tombstone (the vectors live in
# ``beliefs``; ``memory_jobs`` belongs to the job queue, and its rows go with the user's).
ERASED_TABLES = tuple(t for t in USER_TABLES if t != "memory_users")


async def erase_user(parts: EngineParts, user_id: str) -> EraseReceipt:
    """Delete the user's beliefs, episodes, ledger, provenance and jobs; refuse later
    writes.

    Waits for the user's lock, so a batch being applied either lands before the erase
    (and is deleted with the rest) or is refused after it. Erasing an unknown user
    still leaves a tombstone.
    """
    user_id = check_id("user_id", user_id)
    deleted: dict[str, int] = {}
    async with parts.db.sa_engine.begin() as conn:
        await lock_user(conn, user_id)
        now = parts.now()
        for table in ERASED_TABLES:
            result = await conn.execute(
                text(f"DELETE FROM {table} WHERE user_id = :u"), {"u": user_id}
            )
            deleted[table] = result.rowcount
        await conn.execute(
            text(
                "INSERT INTO memory_users (user_id, version, erased_at, created_at, updated_at) "
                "VALUES (:u, 1, :now, :now, :now) ON CONFLICT (user_id) DO UPDATE SET "
                "erased_at = EXCLUDED.erased_at, version = memory_users.version + 1, "
                "active_beliefs = 0, episodes = 0, updated_at = EXCLUDED.updated_at"
            ),
            {"u": user_id, "now": now},
        )
    forget_rendered()
    return EraseReceipt(user_id=user_id, erased_at=now, deleted=deleted)


async def reinstate_user(parts: EngineParts, user_id: str) -> datetime | None:
    """Lift the erase tombstone; returns when the lifted erase happened, or None (and
    changes nothing) for a user that is not erased."""
    user_id = check_id("user_id", user_id)
    async with parts.db.sa_engine.begin() as conn:
        await lock_user(conn, user_id)
        erased_at: datetime | None = await conn.scalar(
            text(
                "UPDATE memory_users m SET erased_at = NULL, updated_at = :now "
                "FROM memory_users prior WHERE m.user_id = :u AND prior.user_id = m.user_id "
                "AND prior.erased_at IS NOT NULL RETURNING prior.erased_at"
            ),
            {"u": user_id, "now": parts.now()},
        )
    return erased_at
