"""What the short-term strategies share as sessions over an ``inner`` SDK session."""

from __future__ import annotations

from agents.memory import Session, SessionSettings

from ..checks import check_session


class Wrapper:
    """An SDK session over ``inner``, which stores every item: the wrapper's id is the
    inner session's (read from it: OpenAI's conversation session makes its id on first
    use, and raises when asked before)."""

    session_settings: SessionSettings | None = None

    def __init__(self, inner: Session) -> None:
        check_session("inner", inner)
        self._inner = inner

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

    def _shown_id(self) -> str | None:
        """The id for a repr: None while the inner session has none yet."""
        try:
            return self._inner.session_id
        except Exception:
            return None


__all__ = ["Wrapper"]
