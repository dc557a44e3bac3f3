"""Locks that a forked child gets fresh.

A lock another thread holds at the moment the process forks stays held in the child, where
that thread does not run: the child's first use of it waits for ever. Servers that load
the application and then fork their workers (gunicorn's ``--preload``) do exactly that.
The library's process-wide locks are :class:`ForkSafeLock`: after a fork the child
replaces each with a new, free one. What the locks guarded is the child's copy of the
parent's state, as any forked process has it.
"""

from __future__ import annotations

import os
import threading
import weakref
from types import TracebackType


class ForkSafeLock:
    """A ``threading.Lock`` that is free again in a forked child."""

    __slots__ = ("__weakref__", "_lock")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        _locks.add(self)

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        return self._lock.acquire(blocking, timeout)

    def release(self) -> None:
        self._lock.release()

    def locked(self) -> bool:
        return self._lock.locked()

    def __enter__(self) -> bool:
        return self._lock.acquire()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._lock.release()

    def _renew(self) -> None:
        self._lock = threading.Lock()


_locks: weakref.WeakSet[ForkSafeLock] = weakref.WeakSet()


def _after_fork() -> None:
    for lock in list(_locks):
        lock._renew()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)

__all__ = ["ForkSafeLock"]
