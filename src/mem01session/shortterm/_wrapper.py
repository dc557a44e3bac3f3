"""What the short-term strategies share as sessions over an ``inner`` SDK session."""

from __future__ import annotations

import asyncio

from agents.items import TResponseInputItem
from agents.memory import Session, SessionSettings

from ..checks import check_session
from ..errors import ConfigError
from ..session import records_turns
from ._items import strip


class Wrapper:
    """An SDK session over ``inner``, which stores every item: the wrapper's id is the
    inner session's (read from it: OpenAI's conversation session makes its id on first
    use, and raises when asked before). Its writes take ``_lock``, one at a time."""

    session_settings: SessionSettings | None = None

    def __init__(self, inner: Session) -> None:
        check_session("inner", inner)
        if records_turns(inner):
            name = type(self).__name__
            raise ConfigError(
                f"inner is a Mem01Session: put the {name} inside it instead, "
                f"Mem01Session(session_id, user_id, inner={name}(SQLiteSession(...), ...)) "
                "(over it, what the wrapper rewrites or summarizes would be recorded again "
                "as things the user said)"
            )
        self._inner = inner
        self._lock = asyncio.Lock()

    @property
    def session_id(self) -> str:
        return self._inner.session_id

    @session_id.setter
    def session_id(self, value: str) -> None:
        self._inner.session_id = value

    @property
    def inner(self) -> Session:
        """The wrapped session, which holds every item (hidden or summarized ones too)."""
        return self._inner

    async def pop_item(self) -> TResponseInputItem | None:
        """Remove and return the newest item."""
        async with self._lock:
            item = await self._inner.pop_item()
        return None if item is None else strip(item)

    async def clear_session(self) -> None:
        """Remove every item, hidden or summarized ones included."""
        async with self._lock:
            await self._inner.clear_session()

    def _shown_id(self) -> str | None:
        """The id for a repr: None while the inner session has none yet."""
        try:
            return self._inner.session_id
        except Exception:
            return None


__all__ = ["Wrapper"]
