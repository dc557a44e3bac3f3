"""ManagedSession: one chat's session as handed out by :class:`SessionManager`."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol, cast

from agents import RunConfig, SQLiteSession
from agents.items import TResponseInputItem
from agents.memory import Session, SessionSettings

from ..checks import check_items, check_limit
from ..errors import ConfigError, MemoryClosedError
from ._items import item_cut
from ._store import rewrite


def check_state_key(key: object) -> str:
    """A state key: a string (it is stored as a JSON object's key, where any other value
    would become a string, and reading it back by the key given would find nothing)."""
    if not isinstance(key, str):
        raise ConfigError(f"session state keys must be strings, got {type(key).__name__}")
    return key


@dataclass(frozen=True)
class SessionKey:
    """Who and where: one conversation per (platform, user, chat)."""

    platform: str
    user_id: str
    chat_id: str

    @property
    def memory_user_id(self) -> str:
        """The durable-memory user: ``"platform:user_id"``, shared by all of the user's chats."""
        return f"{self.platform}:{self.user_id}"


@dataclass
class SessionRecord:
    """The registry row of one managed session."""

    key: SessionKey
    session_id: str
    created_at: datetime
    last_activity_at: datetime
    state: dict[str, Any]


class Registry(Protocol):
    """What a managed session asks of the :class:`SessionManager` that handed it out."""

    def _touch(self, record: SessionRecord) -> None: ...

    def _holds(self, managed: ManagedSession) -> bool: ...

    def _update_state(
        self, record: SessionRecord, values: Mapping[str, Any], remove: Sequence[str]
    ) -> None: ...


class ManagedSession:
    """A :class:`agents.memory.Session` for one chat, with activity tracking and state.

    It is the session the manager's factory built (:attr:`session`: a ``Mem01Session``
    with :func:`~mem01session.shortterm.mem01_session_factory`) plus the chat's state and
    expiry: every attribute it does not define itself is the inner session's, so a
    managed ``Mem01Session`` answers ``recall``, ``flush_memory``, ``last_memory_error``,
    ``last_recall``, ``memory``, ``user_id`` and the rest of that class's surface (typed
    through :attr:`session` when your type checker should see them).

    Every ``add_items`` touches the session (so it does not expire while in use) and then
    truncates the transcript to ``max_session_history`` items. Pass the object as the
    Runner's ``context`` to reach its state from tools::

        @function_tool
        def remember_city(ctx: RunContextWrapper[ManagedSession], city: str) -> str:
            ctx.context.set_state("city", city)
            return "ok"

        await Runner.run(agent, text, session=s, context=s, run_config=s.run_config())
    """

    session_settings: SessionSettings | None = None

    def __init__(
        self,
        manager: Registry,
        record: SessionRecord,
        session: Session,
        transcript: SQLiteSession,
        max_session_history: int | None,
    ) -> None:
        self._manager = manager
        self._record = record
        self._session = session
        self._transcript = transcript
        self._max_history = max_session_history
        self.session_id: str = record.session_id

    def __repr__(self) -> str:
        k = self._record.key
        return (
            f"ManagedSession(platform={k.platform!r}, user_id={k.user_id!r}, "
            f"chat_id={k.chat_id!r}, session_id={self.session_id!r})"
        )

    def __getattr__(self, name: str) -> Any:
        # Called only for names this class does not have: the inner session's surface.
        if name.startswith("_") or "_session" not in self.__dict__:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        try:
            return getattr(self._session, name)
        except AttributeError:
            raise AttributeError(
                f"{type(self).__name__!r} object has no attribute {name!r}, nor has the "
                f"{type(self._session).__name__} it manages (durable memory needs "
                "SessionManager(..., session_factory=mem01_session_factory(memory)))"
            ) from None

    def __setattr__(self, name: str, value: Any) -> None:
        # A settable property of the inner session (a Mem01Session's timezone) is set there:
        # set on this wrapper, it would shadow the inner's and change nothing.
        inner = self.__dict__.get("_session")
        prop = getattr(type(inner), name, None)
        if isinstance(prop, property) and prop.fset is not None and not hasattr(type(self), name):
            setattr(inner, name, value)
        else:
            super().__setattr__(name, value)

    def __dir__(self) -> list[str]:
        return sorted(set(super().__dir__()) | set(dir(self._session)))

    @property
    def key(self) -> SessionKey:
        return self._record.key

    @property
    def memory_user_id(self) -> str:
        return self._record.key.memory_user_id

    @property
    def created_at(self) -> datetime:
        return self._record.created_at

    @property
    def last_activity_at(self) -> datetime:
        return self._record.last_activity_at

    @property
    def session(self) -> Session:
        """The session built by the manager's factory (e.g. a ``Mem01Session``)."""
        return self._session

    @property
    def transcript(self) -> SQLiteSession:
        """The SQLite transcript under :attr:`session`."""
        return self._transcript

    def touch(self) -> None:
        """Record activity now (persisted)."""
        self._manager._touch(self._record)

    @property
    def state(self) -> dict[str, Any]:
        """A copy of the session state."""
        return copy.deepcopy(self._record.state)

    def get_state(self, key: str, default: Any = None) -> Any:
        """One state value (a copy), or ``default``."""
        return copy.deepcopy(self._record.state.get(check_state_key(key), default))

    def set_state(self, key: str, value: Any) -> None:
        """Set and persist one JSON-serializable state value."""
        self._manager._update_state(self._record, {key: value}, ())

    def update_state(self, values: Mapping[str, Any]) -> None:
        """Set and persist several values at once."""
        self._manager._update_state(self._record, values, ())

    def delete_state(self, key: str) -> None:
        """Remove one state value (persisted); missing keys are ignored."""
        self._manager._update_state(self._record, {}, (key,))

    def run_config(self, base: RunConfig | None = None) -> RunConfig:
        """The inner session's ``run_config`` (e.g. Mem01Session's recall), else ``base``."""
        run_config = getattr(self._session, "run_config", None)
        if callable(run_config):
            return cast(RunConfig, run_config(base))
        return base if base is not None else RunConfig()

    def _check_live(self) -> None:
        """Refuse the transcript's methods once the manager let go of this chat (expired,
        replaced, removed, or the manager closed): its store is closed."""
        if not self._manager._holds(self):
            raise MemoryClosedError(
                f"chat {self._record.key.chat_id!r} of user {self._record.key.user_id!r} "
                "expired, was replaced or removed, or its manager closed; take it again with "
                "get_or_create"
            )

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        self._check_live()
        limit = check_limit(limit)
        if limit is None and self.session_settings is not None:
            limit = self.session_settings.limit
        return await self._session.get_items(limit)

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Touch, append, then keep at most ``max_session_history`` transcript items."""
        self._check_live()
        check_items(items)
        self.touch()
        await self._session.add_items(items)
        if self._max_history is not None:
            keep = self._max_history

            def plan(stored: list[TResponseInputItem]) -> list[TResponseInputItem] | None:
                cut = item_cut(stored, keep)
                return stored[cut:] if cut else None

            await rewrite(self._transcript, plan)

    async def pop_item(self) -> TResponseInputItem | None:
        self._check_live()
        return await self._session.pop_item()

    async def clear_session(self) -> None:
        self._check_live()
        await self._session.clear_session()
