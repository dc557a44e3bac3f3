"""What a forked child must start afresh.

A process that forks keeps, in the child, every object of the parent as it was: a lock
another thread held at that moment stays held (that thread does not run in the child, so
the child's first use of it waits for ever), and a thread's queue has no thread behind it.
Servers that load the application and then fork their workers (gunicorn's ``--preload``)
do exactly that. So the objects that must start afresh register here
(:func:`renew_in_child`), and after a fork the child calls each one's ``forked()``; the
library's process-wide locks are :class:`ForkSafeLock`, which do so themselves.
"""

from __future__ import annotations

import os
import threading
import weakref
from types import TracebackType
from typing import Protocol


class Renewable(Protocol):
    def forked(self) -> None:
        """Called in a child just forked, before anything else of the library runs."""


def renew_in_child(owner: Renewable) -> None:
    """Call ``owner.forked()`` in every child forked while ``owner`` lives (held weakly)."""
    _owners.add(owner)


class ForkSafeLock:
    """A ``threading.Lock`` that is free again in a forked child."""

    __slots__ = ("__weakref__", "_lock")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        renew_in_child(self)

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

    def forked(self) -> None:
        self._lock = threading.Lock()


_owners: weakref.WeakSet[Renewable] = weakref.WeakSet()


def _after_fork() -> None:
    for owner in list(_owners):
        owner.forked()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)

__all__ = ["ForkSafeLock", "Renewable", "renew_in_child"]
