"""Erase: hard-delete a user's durable memory in one transaction and leave a tombstone."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlalchemy import text

from ..records import EraseReceipt
from .users import check_user_id, lock_user
from .validate import aware

if TYPE_CHECKING:
    from .core import BeliefEngine

# Every table holding a user's durable memory (the vectors live in ``beliefs``).
ERASED_TABLES = ("beliefs", "belief_events", "belief_sources", "memory_jobs")


async def erase_user(engine: BeliefEngine, user_id: str) -> EraseReceipt:
    """Delete the user's beliefs, ledger, provenance and jobs; refuse later writes.

    Waits for the user's lock, so a batch being applied either lands before the erase
    (and is deleted with the rest) or is refused after it. Erasing an unknown user
    still leaves a tombstone.
    """
    user_id = check_user_id(user_id)
    deleted: dict[str, int] = {}
    async with engine.db.engine.begin() as conn:
        await lock_user(conn, user_id)
        now = aware(engine.clock())
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
                "updated_at = EXCLUDED.updated_at"
            ),
            {"u": user_id, "now": now},
        )
    return EraseReceipt(user_id=user_id, erased_at=now, deleted=deleted)


async def reinstate_user(engine: BeliefEngine, user_id: str) -> None:
    """Lift the erase tombstone; a no-op for a user that was never erased."""
    user_id = check_user_id(user_id)
    async with engine.db.engine.begin() as conn:
        await lock_user(conn, user_id)
        await conn.execute(
            text(
                "UPDATE memory_users SET erased_at = NULL, updated_at = :now "
                "WHERE user_id = :u AND erased_at IS NOT NULL"
            ),
            {"u": user_id, "now": aware(engine.clock())},
        )
