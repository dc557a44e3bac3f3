"""SessionManager: one conversation per (platform, user, chat), with TTL and state.

Everything lives in one SQLite file, ``folder / "sessions.sqlite"``: the SDK's transcript
tables (``agent_sessions``, ``agent_messages``, written by :class:`agents.SQLiteSession`) and
the registry table ``mem01_chat_sessions`` (key -> session_id, created_at, last_activity_at,
state JSON). One file keeps the registry and the transcripts it points to in step: removing
or expiring a chat deletes its row and its transcript in one transaction, and a restart sees
exactly what was there. Several processes may share the folder (SQLite locking; state updates
are read-modify-write inside one transaction).

Expiry: a chat whose last activity is ``session_ttl_seconds`` old is expired. ``get`` returns
None for it; ``get_or_create`` deletes it and starts a fresh conversation (new session_id,
empty transcript, empty state). Durable memory is not touched: with
:func:`mem01_session_factory` the user's beliefs are keyed by ``"platform:user_id"``, so the
new chat still recalls what the user said in the old one. The session of a chat let go of
(expired, removed, replaced by another process's) is closed in the background, so what a
``Mem01Session`` could not enqueue yet is sent then, and the session freed; ``aclose``
closes the chats still open.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import sqlite3
import threading
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import closing, contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import TracebackType
from typing import Any

from agents import SQLiteSession
from agents.memory import Session

from ..checks import check_instance, check_positive_int, check_seconds
from ..errors import ConfigError, MemoryClosedError
from ..logs import describe, get_logger
from ..memory import Memory
from ..private import private_file, private_folder
from ..session import Mem01Session
from ..session.options import SessionOptions
from .managed import ManagedSession, SessionKey, SessionRecord, check_state_key

log = get_logger(__name__)

SessionFactory = Callable[[str, str, SQLiteSession], Session]
"""``(session_id, memory_user_id, transcript) -> Session`` used for every managed session."""

DB_FILE = "sessions.sqlite"
_TABLE = "mem01_chat_sessions"
_MESSAGES = "agent_messages"
_SESSIONS = "agent_sessions"


def plain_factory(session_id: str, memory_user_id: str, inner: SQLiteSession) -> Session:
    """The default factory: the transcript itself, no durable memory."""
    return inner


def mem01_session_factory(memory: Memory, **options: Any) -> SessionFactory:
    """A factory making ``Mem01Session``s whose durable memory is scoped to the platform user.

    ``options`` go to ``Mem01Session`` (e.g. ``max_memory_tokens``, ``strict``). A memory
    that is not a ``Memory``, an option ``Mem01Session`` does not take (or one the manager
    gives each chat: its id, user id and transcript) or a bad value of one is a
    ``ConfigError`` here, not at the first chat.
    """
    check_instance("memory", memory, Memory, optional=False)
    given = sorted(set(options) & {"session_id", "user_id", "inner"})
    if given:
        raise ConfigError(
            f"{', '.join(given)}: the manager gives each chat its own; pass only other "
            "Mem01Session options"
        )
    try:
        inspect.signature(Mem01Session).bind("chat", "user", **options)
    except TypeError as exc:
        raise ConfigError(f"mem01_session_factory: {exc}") from None
    SessionOptions(**options).placement(memory)

    def build(session_id: str, memory_user_id: str, inner: SQLiteSession) -> Session:
        return Mem01Session(session_id, memory_user_id, inner=inner, memory=memory, **options)

    return build


def _utc_now() -> datetime:
    return datetime.now(UTC)


def _check_part(name: str, value: object) -> str:
    if not isinstance(value, str) or not value:
        raise ConfigError(f"{name} must be a non-empty string, got {value!r}")
    return value


class SessionManager:
    """Chat sessions keyed by (platform, user_id, chat_id), persisted under ``folder``."""

    def __init__(
        self,
        folder: str | Path,
        *,
        session_ttl_seconds: float | None = 3600,
        max_session_history: int | None = None,
        session_factory: SessionFactory = plain_factory,
        clock: Callable[[], datetime] = _utc_now,
    ) -> None:
        ttl = check_seconds("session_ttl_seconds", session_ttl_seconds, allow_none=True)
        if ttl == 0:
            raise ConfigError("session_ttl_seconds must be > 0 (or None: never expire), got 0")
        if max_session_history is not None:
            check_positive_int("max_session_history", max_session_history)
        if not isinstance(folder, str | Path) or not str(folder):
            raise ConfigError(f"folder must be a path (str or Path), got {folder!r}")
        for name, part in (("session_factory", session_factory), ("clock", clock)):
            if not callable(part):
                raise ConfigError(f"{name} must be callable, got {type(part).__name__}")
        self.folder = Path(folder)
        if not self.folder.exists():  # made here: private (a folder of yours stays as it is)
            private_folder(self.folder)
        self.db_path = private_file(self.folder / DB_FILE)
        self._ttl = None if ttl is None else timedelta(seconds=ttl)
        self._max_history = max_session_history
        self._factory = session_factory
        self._clock = clock
        self._lock = threading.RLock()
        self._open: dict[SessionKey, ManagedSession] = {}
        self._retiring: set[asyncio.Task[None]] = set()  # closes of chats let go of
        SQLiteSession("mem01-schema", self.db_path).close()  # creates the SDK's tables
        with self._tx() as conn:
            conn.execute(
                f"""CREATE TABLE IF NOT EXISTS {_TABLE} (
                    platform TEXT NOT NULL, user_id TEXT NOT NULL, chat_id TEXT NOT NULL,
                    session_id TEXT NOT NULL UNIQUE,
                    created_at TEXT NOT NULL, last_activity_at TEXT NOT NULL,
                    state TEXT NOT NULL DEFAULT '{{}}',
                    PRIMARY KEY (platform, user_id, chat_id))"""
            )

    def __repr__(self) -> str:
        return f"SessionManager(folder={str(self.folder)!r}, ttl={self._ttl})"

    def __enter__(self) -> SessionManager:
        return self

    def __exit__(
        self, exc: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    async def __aenter__(self) -> SessionManager:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close every open chat's session (a ``Mem01Session`` enqueues what it still holds
        and gives its extraction a bounded chance to finish), then the transcripts."""
        with self._lock:
            sessions = [managed.session for managed in self._open.values()]
        for session in sessions:
            await _close(session)
        while self._retiring:
            await asyncio.gather(*self._retiring)
        self.close()

    def close(self) -> None:
        """Close the transcripts this manager opened. Sessions with durable memory are not
        closed: what they hold is sent when their memory closes; ``aclose`` closes them."""
        with self._lock:
            for managed in self._open.values():
                managed.transcript.close()
            self._open.clear()

    # -- public API -----------------------------------------------------------------------

    def get_or_create(self, platform: str, user_id: str, chat_id: str) -> ManagedSession:
        """The live session for this chat (touched), or a fresh one if missing or expired."""
        key = self._key(platform, user_id, chat_id)
        with self._lock:
            now = self._clock()
            record = self._load(key)
            if record is not None and not self._expired(record, now):
                record.last_activity_at = now
                self._write_activity(record)
                return self._session_for(record)
            record = SessionRecord(key, uuid.uuid4().hex, now, now, {})
            self._forget(key)
            # Made before the row is written: a chat the factory refuses (a user id its
            # session takes for malformed) leaves no row behind.
            managed = self._session_for(record)
            try:
                with self._tx() as conn:
                    self._delete_row(conn, key)
                    conn.execute(
                        f"INSERT INTO {_TABLE} VALUES (?, ?, ?, ?, ?, ?, ?)",
                        (*_key_params(key), record.session_id, now.isoformat(),
                         now.isoformat(), "{}"),
                    )  # fmt: skip
            except BaseException:
                self._forget(key)
                raise
            return managed

    def get(self, platform: str, user_id: str, chat_id: str) -> ManagedSession | None:
        """The live session for this chat, or None if there is none or it expired."""
        key = self._key(platform, user_id, chat_id)
        with self._lock:
            record = self._load(key)
            if record is None or self._expired(record, self._clock()):
                return None
            return self._session_for(record)

    @staticmethod
    def memory_user_id(platform: str, user_id: str) -> str:
        """The user whose durable memory the chats of ``user_id`` on ``platform`` share
        (``"platform:user_id"``): what to give ``Memory``'s verbs for that person (their
        beliefs, a recall, a forget, an erase)."""
        return SessionManager._key(platform, user_id, "-").memory_user_id

    def remove(self, platform: str, user_id: str, chat_id: str) -> bool:
        """Delete the chat's registry row and transcript; False if there was none."""
        key = self._key(platform, user_id, chat_id)
        with self._lock:
            with self._tx() as conn:
                found = self._delete_row(conn, key)
            self._forget(key)
            return found

    def cleanup_expired(self) -> int:
        """Delete every expired chat (row and transcript); returns how many."""
        with self._lock:
            now = self._clock()
            expired = [r.key for r in self._load_all() if self._expired(r, now)]
            with self._tx() as conn:
                for key in expired:
                    self._delete_row(conn, key)
            for key in expired:
                self._forget(key)
            return len(expired)

    @property
    def active_session_count(self) -> int:
        """Chats that have not expired (across restarts: read from the registry)."""
        with self._lock:
            now = self._clock()
            return sum(not self._expired(r, now) for r in self._load_all())

    # -- used by ManagedSession -------------------------------------------------------------

    def _holds(self, managed: ManagedSession) -> bool:
        """Whether ``managed`` is the chat's live handle (not expired, replaced, removed,
        or handed out before this manager closed)."""
        return self._open.get(managed._record.key) is managed

    def _touch(self, record: SessionRecord) -> None:
        with self._lock:
            record.last_activity_at = self._clock()
            self._write_activity(record)

    def _update_state(
        self, record: SessionRecord, values: Mapping[str, Any], remove: Sequence[str]
    ) -> None:
        for name in (*values, *remove):
            check_state_key(name)
        for name, value in values.items():
            if _nesting(value) > MAX_STATE_NESTING:
                # Deeper, it was stored, then could not be read back (RecursionError).
                raise ConfigError(
                    f"session state {name!r} nests deeper than {MAX_STATE_NESTING} levels"
                )
            try:
                json.dumps(value, allow_nan=False)
            except (TypeError, ValueError) as exc:
                raise ConfigError(
                    f"session state {name!r} is not JSON-serializable: {exc}"
                ) from None
        with self._lock, self._tx() as conn:
            row = conn.execute(
                f"SELECT state FROM {_TABLE} WHERE session_id = ?", (record.session_id,)
            ).fetchone()
            if row is None:  # a chat handle kept past its expiry or replacement
                raise MemoryClosedError(
                    f"chat {record.key.chat_id!r} of user {record.key.user_id!r} expired or "
                    "was replaced; take it again with get_or_create (its state was not saved)"
                )
            state: dict[str, Any] = json.loads(row[0])
            state.update(json.loads(json.dumps(dict(values))))
            for name in remove:
                state.pop(name, None)
            conn.execute(
                f"UPDATE {_TABLE} SET state = ? WHERE session_id = ?",
                (json.dumps(state), record.session_id),
            )
            record.state = state

    # -- internals ----------------------------------------------------------------------------

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        with closing(sqlite3.connect(self.db_path, timeout=30.0)) as conn:
            conn.isolation_level = None
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    @staticmethod
    def _key(platform: str, user_id: str, chat_id: str) -> SessionKey:
        # The memory user is "platform:user_id": a ':' in the platform would let two people
        # share one ("a:b" + "c" and "a" + "b:c"). User ids may hold anything.
        if isinstance(platform, str) and ":" in platform:
            raise ConfigError(f"platform must not contain ':', got {platform!r}")
        return SessionKey(
            _check_part("platform", platform),
            _check_part("user_id", user_id),
            _check_part("chat_id", chat_id),
        )

    def _expired(self, record: SessionRecord, now: datetime) -> bool:
        return self._ttl is not None and now - record.last_activity_at >= self._ttl

    def _load(self, key: SessionKey) -> SessionRecord | None:
        with self._tx() as conn:
            row = conn.execute(
                f"SELECT * FROM {_TABLE} WHERE platform = ? AND user_id = ? AND chat_id = ?",
                _key_params(key),
            ).fetchone()
        return None if row is None else _record(row)

    def _load_all(self) -> list[SessionRecord]:
        with self._tx() as conn:
            rows = conn.execute(f"SELECT * FROM {_TABLE}").fetchall()
        return [_record(row) for row in rows]

    def _write_activity(self, record: SessionRecord) -> None:
        with self._tx() as conn:
            conn.execute(
                f"UPDATE {_TABLE} SET last_activity_at = ? WHERE session_id = ?",
                (record.last_activity_at.isoformat(), record.session_id),
            )

    @staticmethod
    def _delete_row(conn: sqlite3.Connection, key: SessionKey) -> bool:
        row = conn.execute(
            f"DELETE FROM {_TABLE} WHERE platform = ? AND user_id = ? AND chat_id = ? "
            "RETURNING session_id",
            _key_params(key),
        ).fetchone()
        if row is None:
            return False
        conn.execute(f"DELETE FROM {_MESSAGES} WHERE session_id = ?", (row[0],))
        conn.execute(f"DELETE FROM {_SESSIONS} WHERE session_id = ?", (row[0],))
        return True

    def _forget(self, key: SessionKey) -> None:
        managed = self._open.pop(key, None)
        if managed is not None:
            managed.transcript.close()
            self._retire(managed.session)

    def _retire(self, session: Session) -> None:
        """Close a session let go of (expired, removed, replaced) in the background: turns a
        ``Mem01Session`` still holds are sent now, not when its memory closes."""
        if not callable(getattr(session, "aclose", None)):
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no loop to close it on: its memory sends what it holds
            return
        task = loop.create_task(_close(session))
        self._retiring.add(task)
        task.add_done_callback(self._retiring.discard)

    def _session_for(self, record: SessionRecord) -> ManagedSession:
        managed = self._open.get(record.key)
        if managed is not None and managed.session_id == record.session_id:
            # Keep the one object per chat (its locks and wrappers), with fresh registry data.
            managed._record.last_activity_at = record.last_activity_at
            managed._record.state = record.state
            return managed
        self._forget(record.key)
        transcript = SQLiteSession(
            record.session_id, self.db_path, sessions_table=_SESSIONS, messages_table=_MESSAGES
        )
        try:
            session = self._factory(record.session_id, record.key.memory_user_id, transcript)
        except BaseException:
            transcript.close()
            raise
        managed = ManagedSession(self, record, session, transcript, self._max_history)
        self._open[record.key] = managed
        return managed


MAX_STATE_NESTING = 32
"""How deep a state value's lists and objects may nest."""


def _nesting(value: object) -> int:
    """How deep ``value``'s lists and dicts nest (0: neither), counted without recursion
    (a value nested thousands deep is refused, not a RecursionError)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (list, tuple, dict)):
            if depth > MAX_STATE_NESTING:
                return depth
            deepest = max(deepest, depth)
            inner = item.values() if isinstance(item, dict) else item
            stack.extend((v, depth + 1) for v in inner)
    return deepest


async def _close(session: Session) -> None:
    close = getattr(session, "aclose", None)
    if not callable(close):
        return
    try:
        await close()
    except Exception as exc:  # one chat's failure does not stop the others closing
        log.warning("closing chat session %r failed: %s", session.session_id, describe(exc))


def _key_params(key: SessionKey) -> tuple[str, str, str]:
    return key.platform, key.user_id, key.chat_id


def _record(row: Sequence[Any]) -> SessionRecord:
    platform, user_id, chat_id, session_id, created, active, state = row
    return SessionRecord(
        SessionKey(platform, user_id, chat_id),
        session_id,
        datetime.fromisoformat(created),
        datetime.fromisoformat(active),
        json.loads(state),
    )
