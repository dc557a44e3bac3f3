"""Erase: hard-delete a user's durable memory in one transaction and leave a tombstone;
compact: rewrite what erased rows leave in the tables' files.

What erase guarantees: when it returns, no statement of any process finds anything of the
user (their rows are deleted in one transaction, and no job in flight can write them
back). PostgreSQL keeps a deleted row's bytes in the table's files until VACUUM reuses the
space, and in its write-ahead log until the segment is recycled and overwritten.
:func:`compact` rewrites every user-scoped table (``VACUUM FULL``: new files, the old ones
unlinked), refreshes the planner's statistics (which sample column values) and checkpoints,
so that the database's files no longer hold them; the WAL segments written before are
recycled by later checkpoints, and what the filesystem, backups or replicas keep is outside
the database.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from ..checks import check_id
from ..db.schema import USER_TABLES
from ..errors import DatabaseError
from .engine_parts import EngineParts
from .lines import forget_rendered
from .records import EraseReceipt
from .users import lock_user

# Every user-scoped table but the one holding the tombstone (the vectors live in
# ``beliefs``; ``memory_jobs`` belongs to the job queue, and its rows go with the user's).
ERASED_TABLES = tuple(t for t in USER_TABLES if t != "memory_users")


async def erase_user(parts: EngineParts, user_id: str, *, tombstone: bool = True) -> EraseReceipt:
    """Delete the user's beliefs, episodes, ledger, provenance and jobs; refuse later
    writes.

    Waits for the user's lock, so a batch being applied either lands before the erase
    (and is deleted with the rest) or is refused after it. Erasing an unknown user
    still leaves a tombstone. ``tombstone=False`` deletes the user's row too, so that
    nothing says the user existed (the users list included) and a later write is
    accepted: only for a user none of whose turns is still in flight (a scratch user,
    such as the demo's, after its last turn was applied).
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
        if not tombstone:
            result = await conn.execute(
                text("DELETE FROM memory_users WHERE user_id = :u"), {"u": user_id}
            )
            deleted["memory_users"] = result.rowcount
        else:
            await _leave_tombstone(conn, user_id, now)
    forget_rendered()
    forget = getattr(parts.embedder, "forget_texts", None)  # recent texts' vectors, if kept
    if callable(forget):
        forget()
    return EraseReceipt(user_id=user_id, erased_at=now, deleted=deleted)


async def _leave_tombstone(conn: AsyncConnection, user_id: str, now: datetime) -> None:
    await conn.execute(
        text(
            "INSERT INTO memory_users (user_id, version, erased_at, created_at, updated_at) "
            "VALUES (:u, 1, :now, :now, :now) ON CONFLICT (user_id) DO UPDATE SET "
            "erased_at = EXCLUDED.erased_at, version = memory_users.version + 1, "
            "active_beliefs = 0, episodes = 0, timezone = NULL, "
            "updated_at = EXCLUDED.updated_at"
        ),
        {"u": user_id, "now": now},
    )


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


async def compact(parts: EngineParts) -> list[str]:
    """Rewrite every user-scoped table and its indexes (``VACUUM FULL``), refresh their
    statistics and force a checkpoint and a new WAL segment; returns the tables rewritten.

    Takes an exclusive lock on each table while it is rewritten: every read and write of
    memory waits for it (seconds for a small database, longer for a large one). Needs a
    role allowed to ``CHECKPOINT`` (a superuser, or ``pg_checkpoint``): otherwise
    :class:`~mem01session.errors.DatabaseError` says so, after the rewrite.
    """
    # VACUUM and CHECKPOINT cannot run inside a transaction: one autocommit statement each.
    rewritten: list[str] = []
    for table in USER_TABLES:
        await parts.db.direct.fetch(f"VACUUM (FULL, ANALYZE) {table}", {})
        rewritten.append(table)
    try:
        await parts.db.direct.fetch("CHECKPOINT", {})
        await parts.db.direct.fetch("SELECT pg_switch_wal()", {})
        await parts.db.direct.fetch("CHECKPOINT", {})
    except Exception as exc:
        raise DatabaseError(
            "the tables were rewritten, but this role may not force a checkpoint "
            f"(CHECKPOINT needs a superuser or pg_checkpoint): {type(exc).__name__}"
        ) from None
    forget_rendered()
    return rewritten
