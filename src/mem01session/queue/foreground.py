"""Runs first: the background worker gives way to the runs of its process.

A run's own memory work (from reading its history to its model call: the recall; then the
enqueue of its turn) is CPU its reply waits for; the worker's extraction of earlier turns
is not. On a machine short of CPU both compete, one thread at a time, and every reply
queues behind the worker (docs/benchmarks.md, "Under load"). So a session marks those
steps in :data:`FOREGROUND`, and the worker, before each step of its own (a claim, a read
of a job's candidates, a commit), waits while a run of this process is marked: until the
job's turn was queued ``WorkerPolicy.yield_to_runs`` seconds ago, so that a process whose
runs never pause still keeps its queue short (a deep one would leave the blocks stale). A
run waiting for its model is not marked: an application whose runs wait seconds for an LLM
leaves the worker the time between.

A mark ends with its step, or :data:`MARK_SECONDS` after it began (a run that failed
between reading its history and calling its model never comes back to end it). Marks are
per process: CPU is shared by every ``Memory`` of a process, so a worker yields to the
runs of all of them.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Hashable, Iterator

from .._forks import ForkSafeLock, renew_in_child

# The longest a mark counts: a run's steps before its model call, with a recall within its
# budget (2 s by default), take far less.
MARK_SECONDS = 5.0


class Foreground:
    """The marked steps of this process's runs; safe to use from any thread."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = ForkSafeLock()
        self._marks: dict[Hashable, float] = {}  # owner -> when its mark lapses
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []
        self.waiting = 0
        """Workers waiting for the runs now."""
        renew_in_child(self)

    def mark(self, owner: Hashable) -> None:
        """``owner``'s run is in a step its reply waits for (again: the mark is renewed)."""
        now = self._clock()
        with self._lock:
            self._drop_lapsed(now)  # so that marks never ended cannot pile up
            self._marks[owner] = now + MARK_SECONDS

    def unmark(self, owner: Hashable) -> None:
        """``owner``'s step ended (no mark: nothing happens)."""
        with self._lock:
            if self._marks.pop(owner, None) is not None and not self._marks:
                self._wake_waiters()

    @contextlib.contextmanager
    def marked(self) -> Iterator[None]:
        """A step marked for as long as the block runs."""
        owner = object()
        self.mark(owner)
        try:
            yield
        finally:
            self.unmark(owner)

    def busy(self) -> bool:
        """Whether a run is in a marked step now (lapsed marks are dropped)."""
        now = self._clock()
        with self._lock:
            self._drop_lapsed(now)
            return bool(self._marks)

    def _drop_lapsed(self, now: float) -> None:
        for owner in [owner for owner, until in self._marks.items() if until <= now]:
            del self._marks[owner]

    async def give_way(self, limit: float) -> float:
        """Wait while a run is marked, at most ``limit`` seconds; the seconds waited."""
        if limit <= 0 or not self.busy():
            return 0.0
        loop = asyncio.get_running_loop()
        started = time.monotonic()
        end = started + limit
        with self._lock:
            self.waiting += 1
        try:
            while (left := end - time.monotonic()) > 0:
                quiet: asyncio.Future[None] = loop.create_future()
                with self._lock:
                    now = self._clock()
                    self._drop_lapsed(now)
                    if not self._marks:
                        break
                    lapse = min(self._marks.values()) - now  # the first mark to lapse
                    self._waiters.append((loop, quiet))
                try:
                    await asyncio.wait({quiet}, timeout=min(left, lapse))
                finally:
                    with self._lock:
                        self._waiters.remove((loop, quiet))
        finally:
            with self._lock:
                self.waiting -= 1
        return time.monotonic() - started

    def forked(self) -> None:
        """In a child just forked: nothing of the parent's runs or workers."""
        self._marks = {}
        self._waiters = []
        self.waiting = 0

    def _wake_waiters(self) -> None:
        """The last mark ended: every waiting worker goes on (called under the lock)."""
        for loop, quiet in self._waiters:
            with contextlib.suppress(RuntimeError):  # its loop closed meanwhile
                loop.call_soon_threadsafe(_resolve, quiet)


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


FOREGROUND = Foreground()
"""This process's runs, as sessions mark them and workers give way to them."""

__all__ = ["FOREGROUND", "MARK_SECONDS", "Foreground"]
