"""Backfill: the conversations an application already keeps, through memory's pipeline.

An application built on the Agents SDK keeps its conversations in an SDK session store:
``SQLiteSession`` files, or a database through ``SQLAlchemySession`` (both: a table of
sessions and one of messages, each message an item as JSON with the time it was added).
:func:`backfill` reads such a store conversation by conversation, oldest first, cuts each
into turns (a user's message and what answered it, as a run of the agent adds them) and
records every turn as a job of the conversation's user, dated when it was said, as a
session records a turn that just happened; this memory's worker then extracts it and
stores its episodes, in that order. Each turn's job is keyed by the turn itself, so that
a backfill stopped midway (killed, even) and run again records every turn exactly once.

Which user a conversation belongs to, the caller says: one user for all, a mapping or a
function from session id to user id (None: left out), or a column of a table of the store
(:func:`users_from_column`; the chats table of :class:`~mem01session.shortterm.
SessionManager` is found without being named).

Example::

    async with Memory() as memory:
        report = await backfill(memory, "conversations.sqlite", users="alice")
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..checks import check_id
from ..errors import ConfigError, UserErasedError
from ..memory import Memory
from ..queue import JobStore
from ..queue.turns import TurnMessage
from .items import turn_messages

UserMap = str | Mapping[str, str] | Callable[[str], str | None]
"""Whose each conversation is: one user id for all, session id -> user id, or a function
of the session id (None: the conversation is left out)."""

BATCH = 64
"""Turns recorded before the worker is waited for."""

MANAGED_CHATS = "mem01_chat_sessions"
"""The table where :class:`~mem01session.shortterm.SessionManager` keeps whose each chat is."""
_IDENT = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


@dataclass(frozen=True)
class StoredTurn:
    """One turn read from the store."""

    session_id: str
    first_item: int
    said_at: datetime
    messages: tuple[TurnMessage, ...]

    @property
    def key(self) -> str:
        """The job key of the turn: the same turn gets the same key at every run, also when
        its reply was stored after an earlier run (the user's words alone are keyed)."""
        return self._digest(m for m in self.messages if m.role == "user")

    @property
    def legacy_key(self) -> str:
        """The key releases before 0.2 gave the turn (the reply's words too): a turn
        recorded under it is not recorded again."""
        return self._digest(self.messages)

    def _digest(self, messages: Iterable[TurnMessage]) -> str:
        digest = hashlib.sha256(f"{self.session_id}\0{self.first_item}".encode())
        for message in messages:
            digest.update(f"\0{message.role}\0{message.text}".encode())
        return "backfill:" + digest.hexdigest()[:40]


@dataclass
class BackfillReport:
    """What a backfill did."""

    conversations: int = 0
    turns: int = 0
    recorded: int = 0
    """Turns recorded now (the others were recorded by an earlier run)."""
    left_out: list[str] = field(default_factory=list)
    """Conversations no user was given for."""
    refused: dict[str, int] = field(default_factory=dict)
    """Turns of erased users, per user: not recorded."""
    unreadable: int = 0
    """Stored items that are not JSON (not written by an SDK session): skipped."""


def _ident(name: str, what: str) -> str:
    if not name or not set(name) <= _IDENT:
        raise ConfigError(f"{what} must be a plain table or column name, got {name!r:.60}")
    return name


class Store:
    """An SDK session store: a SQLite file, or any database SQLAlchemy reaches by URL."""

    def __init__(
        self,
        where: str | Path,
        *,
        sessions_table: str = "agent_sessions",
        messages_table: str = "agent_messages",
    ) -> None:
        from sqlalchemy import create_engine

        text = str(where)
        if "://" not in text:
            path = Path(text)
            if not path.is_file():
                raise ConfigError(f"no session store at {path}")
            text = f"sqlite:///{path}"
        self.sessions = _ident(sessions_table, "sessions_table")
        self.messages = _ident(messages_table, "messages_table")
        self._engine = create_engine(text)
        self.url = self._engine.url.render_as_string(hide_password=True)
        self.unreadable: dict[str, int] = {}
        """Per conversation, the items its last :meth:`turns` skipped as not JSON."""

    def close(self) -> None:
        self._engine.dispose()

    def _rows(self, sql: str, params: Mapping[str, Any] | None = None) -> list[Any]:
        from sqlalchemy import text

        with self._engine.connect() as conn:
            return list(conn.execute(text(sql), dict(params or {})))

    def conversations(self) -> list[str]:
        """The store's conversations, the one whose first message is oldest first; a
        store without the SDK's messages table is refused by name."""
        if not self.has_table(self.messages):
            raise ConfigError(
                f"{self.url} is not an SDK session store: it has no {self.messages} table "
                "(SQLiteSession's; name another with messages_table)"
            )
        rows = self._rows(
            f"SELECT session_id, min(created_at) AS first, min(id) AS first_id "
            f"FROM {self.messages} GROUP BY session_id ORDER BY first, first_id"
        )
        return [str(r[0]) for r in rows]

    def has_table(self, name: str) -> bool:
        from sqlalchemy import inspect

        return inspect(self._engine).has_table(name)

    def column(self, table: str, column: str) -> dict[str, str]:
        """``session_id -> column`` of ``table``."""
        rows = self._rows(
            f"SELECT session_id, {_ident(column, 'column')} FROM {_ident(table, 'table')}"
        )
        return {str(s): str(u) for s, u in rows if u is not None}

    def turns(self, session_id: str) -> Iterator[StoredTurn]:
        """The conversation's turns, in order: a user's message (or several in a row) and
        the items after it, up to the next user message."""
        rows = self._rows(
            f"SELECT id, message_data, created_at FROM {self.messages} "
            "WHERE session_id = :s ORDER BY id",
            {"s": session_id},
        )
        group: list[tuple[int, Any, datetime]] = []
        answered = False
        self.unreadable[session_id] = 0
        for item_id, data, created in rows:
            try:
                item = json.loads(data) if isinstance(data, str | bytes) else data
            except ValueError:  # not an item the SDK wrote: nothing to read in it
                self.unreadable[session_id] += 1
                continue
            is_user = isinstance(item, Mapping) and item.get("role") == "user"
            if is_user and answered and group:
                yield from _turn(session_id, group)
                group, answered = [], False
            if not is_user:
                answered = True
            group.append((int(item_id), item, _moment(created)))
        if group:
            yield from _turn(session_id, group)


def _turn(session_id: str, group: Sequence[tuple[int, Any, datetime]]) -> Iterator[StoredTurn]:
    messages = turn_messages(item for _, item, _ in group)
    if messages:
        yield StoredTurn(session_id, group[0][0], group[0][2], tuple(messages))


def _moment(value: Any) -> datetime:
    """A stored time (SQLite's ``CURRENT_TIMESTAMP`` text is UTC) as an aware datetime."""
    if isinstance(value, datetime):
        moment = value
    else:
        try:
            moment = datetime.fromisoformat(str(value))
        except ValueError:
            raise ConfigError(f"a message's created_at is not a time: {value!r:.40}") from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def users_from_column(store: Store, where: str) -> dict[str, str]:
    """``TABLE.COLUMN`` of the store as session id -> user id."""
    table, dot, column = where.partition(".")
    if not dot:
        raise ConfigError(f"name the column as TABLE.COLUMN, got {where!r:.60}")
    return store.column(table, column)


def user_of(users: UserMap | None, store: Store) -> Callable[[str], str | None]:
    """Whose each conversation is (see :data:`UserMap`); None: the store's
    :data:`MANAGED_CHATS` table must say."""
    if users is None:
        if not store.has_table(MANAGED_CHATS):
            raise ConfigError(
                "say whose the conversations are: one user, a map of session to user, "
                f"or a column of the store (the store has no {MANAGED_CHATS} table)"
            )
        users = users_from_column(store, f"{MANAGED_CHATS}.user_id")
    if isinstance(users, str):
        one = check_id("user", users)
        return lambda _session: one
    if isinstance(users, Mapping):
        mapping = dict(users)
        return mapping.get
    if not callable(users):
        raise ConfigError(
            "users must be one user id, a map of session id to user id, or a function of "
            f"the session id, got {type(users).__name__}"
        )
    return users


async def backfill(
    memory: Memory,
    store: str | Path | Store,
    users: UserMap | None = None,
    *,
    progress: Callable[[int, int], None] | None = None,
) -> BackfillReport:
    """Record every turn of the conversations in ``store`` as if it were happening now,
    and wait until this memory's worker has extracted them (see the module docstring).
    ``progress`` is told the turns done so far and how many there are."""
    opened = store if isinstance(store, Store) else Store(store)
    try:
        whose = user_of(users, opened)
        plan: list[tuple[str, str]] = []
        report = BackfillReport()
        total = 0
        for session_id in opened.conversations():
            user = whose(session_id)
            if user is None:
                report.left_out.append(session_id)
                continue
            plan.append((session_id, check_id("user_id", user)))
            total += sum(1 for _ in opened.turns(session_id))
            report.unreadable += opened.unreadable[session_id]
        report.turns = total
        engine = await memory.engine()
        worker = await memory.worker()
        jobs = JobStore(engine.db)
        done = 0
        for session_id, user in plan:
            report.conversations += 1
            waiting: set[int] = set()
            before = sum((await jobs.counts(user)).counts.values())
            for turn in opened.turns(session_id):
                if user in report.refused:
                    report.refused[user] += 1
                    done += 1
                    continue
                if await jobs.holds_key(user, turn.legacy_key):
                    done += 1  # recorded by an earlier release's backfill
                    continue
                try:
                    job = await jobs.enqueue(
                        user, session_id, turn.messages, now=turn.said_at,
                        idempotency_key=turn.key,
                    )  # fmt: skip
                except UserErasedError:
                    report.refused[user] = report.refused.get(user, 0) + 1
                    done += 1
                    continue
                waiting.add(job)
                if len(waiting) >= BATCH:
                    await worker.wait_until_done(user, waiting, None)
                    done += len(waiting)
                    waiting = set()
                    if progress is not None:
                        progress(done, total)
            if waiting:
                await worker.wait_until_done(user, waiting, None)
                done += len(waiting)
            report.recorded += sum((await jobs.counts(user)).counts.values()) - before
            if progress is not None:
                progress(done, total)
        return report
    finally:
        if not isinstance(store, Store):
            opened.close()


__all__ = ["BackfillReport", "Store", "StoredTurn", "UserMap", "backfill", "users_from_column"]
