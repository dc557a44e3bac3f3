"""TrimmingSession: only the last ``max_turns`` user turns reach the model.

Trimmed items are **hidden on read**, not deleted on write. Hiding never loses data (a
bigger ``max_turns`` brings old turns back), survives a crash at any point (a write is a
plain append), and keeps the view identical after reopening the inner store, because the
view is a pure function of what is stored. The store does grow; :meth:`TrimmingSession.compact`
removes the hidden prefix when you want it bounded. On a file-backed ``SQLiteSession`` that
rewrite is one transaction; on other sessions it is ``clear_session`` + ``add_items`` (a crash
in between loses the history), which is why it is explicit rather than automatic.

A turn starts at a real user message and runs up to the next one; a call and its tool
output always stay together (see :func:`~mem01session.shortterm._items.turn_cut`).
"""

from __future__ import annotations

from agents.items import TResponseInputItem
from agents.memory import Session

from ..checks import check_items, check_limit, check_positive_int
from ._items import drop_orphan_outputs, limit_view, missing_calls, strip, turn_cut
from ._store import read_tail, rewrite
from ._wrapper import Wrapper


def _check_max_turns(value: object) -> int:
    return check_positive_int("max_turns", value)


class TrimmingSession(Wrapper):
    """A :class:`agents.memory.Session` over ``inner`` that shows only the last turns."""

    def __init__(self, inner: Session, max_turns: int) -> None:
        super().__init__(inner)
        self._max_turns = _check_max_turns(max_turns)

    def __repr__(self) -> str:
        return f"TrimmingSession(session_id={self._shown_id()!r}, max_turns={self._max_turns})"

    @property
    def max_turns(self) -> int:
        """How many user turns :meth:`get_items` returns; settable at run time."""
        return self._max_turns

    @max_turns.setter
    def max_turns(self, value: int) -> None:
        self._max_turns = _check_max_turns(value)

    async def _view(self) -> list[TResponseInputItem]:
        turns = self._max_turns

        def enough(got: list[TResponseInputItem]) -> bool:
            # The window must reach before the cut and hold the call of every kept output.
            cut = turn_cut(got, turns)
            return cut > 0 and not missing_calls(got[cut:])

        items = await read_tail(self._inner, enough)
        return drop_orphan_outputs(items[turn_cut(items, turns) :])

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """The last ``max_turns`` turns, then the latest ``limit`` items of those."""
        limit = check_limit(limit)
        async with self._lock:
            view = await self._view()
        if limit is None and self.session_settings is not None:
            limit = self.session_settings.limit
        return [strip(item) for item in limit_view(view, limit)]

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Append ``items`` to the inner session (nothing is deleted)."""
        check_items(items)
        async with self._lock:
            await self._inner.add_items(items)

    async def compact(self) -> int:
        """Delete the hidden prefix from the inner store; returns how many items went."""
        removed = 0

        def plan(items: list[TResponseInputItem]) -> list[TResponseInputItem] | None:
            nonlocal removed
            removed = turn_cut(items, self._max_turns)
            return items[removed:] if removed else None

        async with self._lock:
            await rewrite(self._inner, plan)
        return removed
