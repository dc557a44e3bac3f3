"""Reading and rewriting an inner SDK session.

A rewrite replaces the whole stored history with a new list computed from the current one.
For a file-backed :class:`~agents.SQLiteSession` it runs in one SQLite transaction
(``BEGIN IMMEDIATE``: read, plan, delete, insert, commit), so a crash leaves either the old
history or the new one. Any other session falls back to ``clear_session`` + ``add_items``,
which is not atomic: a crash between the two loses the history. Callers serialize their own
writes with an asyncio lock, so the fallback's read-plan-write is consistent in-process.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Callable
from contextlib import closing
from typing import Any

from agents import SQLiteSession
from agents.items import TResponseInputItem
from agents.memory import Session

Plan = Callable[[list[TResponseInputItem]], list[TResponseInputItem] | None]
"""Given the stored items, the items to store instead, or None to leave them as they are."""

_FIRST_WINDOW = 64


async def read_tail(
    session: Session, enough: Callable[[list[TResponseInputItem]], bool]
) -> list[TResponseInputItem]:
    """The newest items of ``session``, doubling the window until ``enough`` says so.

    Returns the whole history when the session holds fewer items than the window. Explicit
    limits make the read independent of the inner session's own ``session_settings.limit``.
    """
    window = _FIRST_WINDOW
    while True:
        items = await session.get_items(limit=window)
        if len(items) < window or enough(items):
            return items
        window *= 2


async def read_all(session: Session) -> list[TResponseInputItem]:
    """Every stored item of ``session``, oldest first."""
    return await read_tail(session, lambda _items: False)


def atomic_sqlite(session: Session) -> SQLiteSession | None:
    """``session`` when it is a file-backed SQLiteSession that can be rewritten atomically."""
    if isinstance(session, SQLiteSession) and str(session.db_path) != ":memory:":
        return session
    return None


async def rewrite(session: Session, plan: Plan) -> bool:
    """Replace the stored history of ``session`` by ``plan(current)``; False if plan said no."""
    store = atomic_sqlite(session)
    if store is not None:
        return await asyncio.to_thread(_rewrite_sqlite, store, plan)
    current = await read_all(session)
    new = plan(current)
    if new is None:
        return False
    await session.clear_session()
    if new:
        await session.add_items(new)
    return True


def _rewrite_sqlite(store: SQLiteSession, plan: Plan) -> bool:
    messages, sessions = store.messages_table, store.sessions_table
    with closing(sqlite3.connect(str(store.db_path), timeout=30.0)) as conn:
        conn.isolation_level = None  # explicit BEGIN/COMMIT below
        conn.execute("BEGIN IMMEDIATE")
        try:
            rows = conn.execute(
                f"SELECT id, message_data FROM {messages} WHERE session_id = ? ORDER BY id",
                (store.session_id,),
            ).fetchall()
            ids, items = _decode(rows)
            new = plan(items)
            if new is None:
                conn.execute("ROLLBACK")
                return False
            kept = _kept_suffix(items, new)
            if kept is not None:
                # The new history is a suffix of the old: delete the prefix, keep row ids.
                first = ids[len(items) - kept] if kept else None
                if first is None:
                    conn.execute(
                        f"DELETE FROM {messages} WHERE session_id = ?", (store.session_id,)
                    )
                else:
                    conn.execute(
                        f"DELETE FROM {messages} WHERE session_id = ? AND id < ?",
                        (store.session_id, first),
                    )
            else:
                conn.execute(f"DELETE FROM {messages} WHERE session_id = ?", (store.session_id,))
                conn.execute(
                    f"INSERT OR IGNORE INTO {sessions} (session_id) VALUES (?)",
                    (store.session_id,),
                )
                conn.executemany(
                    f"INSERT INTO {messages} (session_id, message_data) VALUES (?, ?)",
                    [(store.session_id, json.dumps(item)) for item in new],
                )
            conn.execute("COMMIT")
            return True
        except BaseException:
            conn.execute("ROLLBACK")
            raise


def _decode(rows: list[Any]) -> tuple[list[int], list[TResponseInputItem]]:
    ids: list[int] = []
    items: list[TResponseInputItem] = []
    for row_id, data in rows:
        try:
            items.append(json.loads(data))
        except (json.JSONDecodeError, TypeError):
            continue  # the SDK skips corrupt rows on read; so do we
        ids.append(int(row_id))
    return ids, items


def _kept_suffix(old: list[TResponseInputItem], new: list[TResponseInputItem]) -> int | None:
    """len(new) when ``new`` equals the tail of ``old``, else None."""
    if len(new) > len(old) or (new and old[len(old) - len(new) :] != new):
        return None
    return len(new)
