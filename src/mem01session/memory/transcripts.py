"""The user's conversations in the transcript stores the library made, for an erase.

The durable memory knows which conversations were the user's (each turn's job names its
conversation). The transcripts themselves are in the SDK's session stores: those this
library made live under ``MEM01_HOME`` (a session's default ``transcripts.sqlite``, the
demo's ``demo-transcripts.sqlite``, a :class:`~mem01session.shortterm.SessionManager`'s
``sessions.sqlite`` when its folder is there, which also says whose each chat is). An erase
that asks for it deletes the user's conversations from each of them, so that no file there
keeps the user's words: SQLite's ``secure_delete`` overwrites the deleted rows, and a
checkpoint empties the write-ahead log. A store it cannot reach (one an application gave
a session as ``inner``, elsewhere) is the application's to clean.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..engine.records import TranscriptsErased

MESSAGES = "agent_messages"
SESSIONS = "agent_sessions"
CHATS = "mem01_chat_sessions"  # SessionManager's: platform, user_id, chat_id -> session_id
MAX_DEPTH = 3
"""How deep under the home folder stores are looked for."""
_SKIPPED = {"pg", "postgres", "data", "pg_wal", "base"}


def stores_under(home: Path) -> list[Path]:
    """The SQLite files under ``home`` that hold the SDK's messages table."""
    found: list[Path] = []
    if not home.is_dir():
        return found

    def walk(folder: Path, depth: int) -> None:
        try:
            entries = sorted(folder.iterdir())
        except OSError:
            return
        for entry in entries:
            if entry.is_dir() and not entry.is_symlink():
                if depth < MAX_DEPTH and entry.name not in _SKIPPED:
                    walk(entry, depth + 1)
            elif entry.suffix in (".sqlite", ".db", ".sqlite3") and _holds_messages(entry):
                found.append(entry)

    walk(home, 0)
    return found


def _holds_messages(path: Path) -> bool:
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5) as conn:
            row = conn.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (MESSAGES,)
            ).fetchone()
        return row is not None
    except sqlite3.Error:
        return False


def erase_conversations(
    stores: Iterable[Path], user_id: str, session_ids: Sequence[str]
) -> tuple[TranscriptsErased, ...]:
    """Delete the conversations ``session_ids`` (and, in a SessionManager's store, every
    chat it says is ``user_id``'s) from each store, overwriting what they held."""
    return tuple(_erase_one(path, user_id, session_ids) for path in stores)


def _erase_one(path: Path, user_id: str, session_ids: Sequence[str]) -> TranscriptsErased:
    conversations = messages = 0
    try:
        conn = sqlite3.connect(path, timeout=30)
    except sqlite3.Error as exc:
        return TranscriptsErased(str(path), 0, 0, f"could not open it: {exc}")
    try:
        conn.execute("PRAGMA secure_delete = ON")  # deleted rows are overwritten with zeros
        with conn:
            wanted = set(session_ids)
            if _has(conn, CHATS):
                owned = conn.execute(
                    f"SELECT session_id FROM {CHATS} WHERE user_id = ?", (user_id,)
                )
                wanted |= {str(r[0]) for r in owned}
                conn.execute(f"DELETE FROM {CHATS} WHERE user_id = ?", (user_id,))
            ids = sorted(wanted)
            for start in range(0, len(ids), 500):
                chunk = ids[start : start + 500]
                marks = ", ".join("?" * len(chunk))
                gone = conn.execute(f"DELETE FROM {MESSAGES} WHERE session_id IN ({marks})", chunk)
                messages += max(gone.rowcount, 0)
                if _has(conn, SESSIONS):
                    gone = conn.execute(
                        f"DELETE FROM {SESSIONS} WHERE session_id IN ({marks})", chunk
                    )
                    conversations += max(gone.rowcount, 0)
        busy = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        problem = None
        if busy is not None and busy[0]:
            problem = (
                "another process is reading it: its write-ahead log still holds the deleted "
                "rows until that process lets go (run the erase again then)"
            )
        return TranscriptsErased(str(path), conversations, messages, problem)
    except sqlite3.Error as exc:
        return TranscriptsErased(str(path), conversations, messages, f"could not clean it: {exc}")
    finally:
        conn.close()


def _has(conn: sqlite3.Connection, table: str) -> bool:
    row = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)
    ).fetchone()
    return row is not None


def read_conversations(
    stores: Iterable[Path], user_id: str, session_ids: Sequence[str]
) -> Iterator[dict[str, Any]]:
    """The items of the conversations ``session_ids`` (and the chats a SessionManager's
    store says are ``user_id``'s) in each store, as a document's ``transcript`` records."""
    for path in stores:
        try:
            conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)
        except sqlite3.Error:
            continue
        try:
            wanted = set(session_ids)
            if _has(conn, CHATS):
                owned = conn.execute(
                    f"SELECT session_id FROM {CHATS} WHERE user_id = ?", (user_id,)
                )
                wanted |= {str(r[0]) for r in owned}
            for session_id in sorted(wanted):
                rows = conn.execute(
                    f"SELECT message_data, created_at FROM {MESSAGES} WHERE session_id = ? "
                    "ORDER BY id",
                    (session_id,),
                )
                for data, created in rows:
                    try:
                        item = json.loads(data)
                    except ValueError:
                        continue
                    if isinstance(item, dict):
                        yield {
                            "kind": "transcript",
                            "user": user_id,
                            "session": session_id,
                            "item": item,
                            "at": _utc(created),
                        }
        finally:
            conn.close()


def write_conversations(store: Path, records: Iterable[Mapping[str, Any]]) -> int:
    """Write ``transcript`` records into ``store`` (made as the SDK's ``SQLiteSession``
    makes it): the conversations it does not hold yet, in one transaction; how many items
    it wrote."""
    from ..private import private_file, private_folder

    private_folder(store.parent)
    conn = sqlite3.connect(private_file(store), timeout=30)
    written = 0
    try:
        with conn:
            conn.execute(
                f"CREATE TABLE IF NOT EXISTS {SESSIONS} (session_id TEXT PRIMARY KEY, "
                "created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP, "
                "updated_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP)"
            )
            conn.execute(
                f"CREATE TABLE IF NOT EXISTS {MESSAGES} (id INTEGER PRIMARY KEY AUTOINCREMENT, "
                "session_id TEXT NOT NULL, message_data TEXT NOT NULL, "
                "created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP, "
                f"FOREIGN KEY (session_id) REFERENCES {SESSIONS} (session_id) ON DELETE CASCADE)"
            )
            held: dict[str, bool] = {}
            for record in records:
                session = str(record["session"])
                if session not in held:
                    row = conn.execute(
                        f"SELECT 1 FROM {MESSAGES} WHERE session_id = ? LIMIT 1", (session,)
                    ).fetchone()
                    held[session] = row is not None
                    if not held[session]:
                        conn.execute(
                            f"INSERT OR IGNORE INTO {SESSIONS} (session_id) VALUES (?)", (session,)
                        )
                if held[session]:
                    continue
                at = record["at"]
                stamp = (
                    at.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")
                    if isinstance(at, datetime)
                    else str(at)
                )
                conn.execute(
                    f"INSERT INTO {MESSAGES} (session_id, message_data, created_at) "
                    "VALUES (?, ?, ?)",
                    (session, json.dumps(record["item"]), stamp),
                )
                written += 1
    finally:
        conn.close()
    return written


def _utc(value: Any) -> str:
    """A stored time (SQLite's ``CURRENT_TIMESTAMP`` text is UTC) as ISO 8601 with its zone."""
    try:
        moment = datetime.fromisoformat(str(value))
    except ValueError:
        moment = datetime.now(UTC)
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).isoformat()


__all__ = ["erase_conversations", "read_conversations", "stores_under", "write_conversations"]
