"""Awaiting work for at most a given time, its clean-up included.

``asyncio.timeout`` cancels the work when time is up, then waits for the work to end. A
database driver ends a cancelled statement politely: psycopg asks the server to cancel it
(waiting up to 5 s for that request) and then waits up to 5 s more for the statement to
end. Against a server that stopped answering, each statement cut short held its caller
up to 10 s past the time it was given (a run's memory work, budgeted at ``recall_wait``,
cuts two: its recall's and its enqueue's). :class:`Bound` gives the work a short grace to clean up
after the first cancellation (:data:`CLEANUP_GRACE_SECONDS`: enough for a server that
answers), then cancels it again, which makes the driver drop the connection at once.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable
from typing import Any, TypeVar

from .logs import describe

T = TypeVar("T")

CLEANUP_GRACE_SECONDS = 0.25
"""How long cancelled work may clean up before it is cancelled again."""

STALLED = "a table locked elsewhere, as by a migration running, or a server that stopped answering"
"""Why a database may not answer in time, as errors say it."""

# Work that outlived both cancellations: kept referenced until it ends (a task nobody
# holds may be collected while it runs).
_abandoned: set[asyncio.Task[Any]] = set()


class Bound:
    """At most ``seconds`` (None: no limit) from when it is made for the work awaited with
    :meth:`run`, clean-up included (see the module docstring). :attr:`expired` says
    whether it cut work short."""

    def __init__(self, seconds: float | None) -> None:
        self.seconds = seconds
        self._deadline = None if seconds is None else time.monotonic() + seconds
        self.expired = False

    async def run(self, work: Awaitable[T]) -> T:
        """``work``'s result; :class:`TimeoutError` if time ran out first (the work is
        then cancelled). Cancelling the caller cancels the work, just as bounded."""
        task = asyncio.ensure_future(work)
        if self._deadline is None:
            return await task
        try:
            done, _ = await asyncio.wait({task}, timeout=self._deadline - time.monotonic())
        except asyncio.CancelledError:
            await stop(task)
            raise
        if task in done:
            return task.result()
        self.expired = True
        await stop(task)
        raise TimeoutError(f"cut short after {self.seconds:g} s")

    def why(self, exc: BaseException) -> str:
        """What ended work that raised ``exc``: this bound, or ``exc`` itself."""
        return f"no answer within {self.seconds:g} s" if self.expired else describe(exc)


async def stop(task: asyncio.Task[Any]) -> bool:
    """Cancel ``task``; past :data:`CLEANUP_GRACE_SECONDS` of clean-up, cancel it again;
    past as long again, leave it (it is not awaited any more). Whether it ended."""
    try:
        for _ in range(2):
            task.cancel()
            done, _ = await asyncio.wait({task}, timeout=CLEANUP_GRACE_SECONDS)
            if done:
                _retrieve(task)
                return True
        return False
    finally:
        if not task.done():
            _abandoned.add(task)
            task.add_done_callback(_forget)


def _forget(task: asyncio.Task[Any]) -> None:
    _abandoned.discard(task)
    _retrieve(task)


def _retrieve(task: asyncio.Task[Any]) -> None:
    """Mark the outcome of cut work as seen: its failure is the cut, not news."""
    if not task.cancelled():
        task.exception()


__all__ = ["CLEANUP_GRACE_SECONDS", "STALLED", "Bound", "stop"]
