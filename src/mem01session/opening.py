"""One opening of something slow to open, shared by every caller, and the pause after a
failed one.

``Memory`` opens its database, engine and workers once, on its own loop; callers from any
event loop wait for that one opening (a caller that gives up waiting leaves it going on,
and the next one finds it done). After an opening failed, the next caller starts another,
but not at once: for :data:`OPEN_RETRY_SECONDS` callers hear of that failure without
trying again. Without the pause, every run (and each turn's enqueue) tried again, each
paying a whole connection timeout against a database that never answers.
"""

from __future__ import annotations

import concurrent.futures
import copy
import threading
import time
from collections.abc import Callable
from typing import Generic, TypeVar

from .errors import DatabaseError
from .logs import describe

T = TypeVar("T")

OPEN_RETRY_SECONDS = 5.0


class Opening(Generic[T]):
    """The opening under way or done (a ``concurrent.futures.Future``), or the failure of
    the last one during the pause after it."""

    def __init__(self) -> None:
        self._future: concurrent.futures.Future[T] | None = None
        self._again_at = 0.0  # time.monotonic() from which a failed opening is retried
        self._lock = threading.Lock()

    def join(
        self, start: Callable[[], concurrent.futures.Future[T]]
    ) -> concurrent.futures.Future[T]:
        """The opening to wait for: the current one, or a new one (``start()``) when there
        is none or the last one failed; during the pause after a failure, that failure is
        raised instead."""
        with self._lock:
            future = self._future
            failed = (
                future is not None
                and future.done()
                and (future.cancelled() or future.exception() is not None)
            )
            pausing = failed and time.monotonic() < self._again_at
            if pausing and future is not None and not future.cancelled():
                raise _again(future)  # it raised a moment ago
            if future is None or failed:
                future = self._future = start()
                future.add_done_callback(self._ended)
            return future

    def _ended(self, future: concurrent.futures.Future[T]) -> None:
        """An opening ended: if it raised, the pause starts now."""
        if not future.cancelled() and future.exception() is not None:
            self._again_at = time.monotonic() + OPEN_RETRY_SECONDS


def _again(future: concurrent.futures.Future[T]) -> BaseException:
    """The failure of the last opening (a copy: the one exception is not raised again and
    again, its traceback growing)."""
    failure = future.exception()
    assert failure is not None
    try:
        return copy.copy(failure).with_traceback(None)
    except Exception:  # an exception class that cannot be copied: its message, then
        return DatabaseError(f"memory is unavailable: {describe(failure)}")


__all__ = ["OPEN_RETRY_SECONDS", "Opening"]
