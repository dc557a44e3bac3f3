"""The sessions a :class:`~mem01session.memory.Memory` flushes when it closes.

A session attaches itself to its memory, weakly: an application that makes one per
conversation and lets it go has it freed, unless it holds turns not yet enqueued (then
the memory holds it until they are sent). A session freed before its jobs were seen
applied hands their ids over, and closing the memory waits for them as for an open
session's.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Sequence
from typing import Protocol

from ..logs import get_logger
from ..queue import MemoryWorker

log = get_logger(__name__)

LEFT_BEHIND_JOBS = 1000
"""At most this many jobs of sessions freed unclosed are waited for when the memory closes."""


class Attached(Protocol):
    """What a session gives its ``Memory`` so that closing the memory flushes it, and
    erasing its user forgets what it holds."""

    user_id: str

    def erasing(self) -> None:
        """The user's memory is about to be erased: drop the turns not yet enqueued and
        stop waiting for the jobs that will be deleted."""
        ...

    async def close(self, flush_timeout: float) -> int:
        """Flush (at most ``flush_timeout`` seconds); how many of the session's accepted
        turns are still not applied."""
        ...


class Attachments:
    """The sessions attached to one memory, and the jobs of those let go of."""

    def __init__(self) -> None:
        self._attached: weakref.WeakSet[Attached] = weakref.WeakSet()
        self._holding: set[Attached] = set()
        # Jobs of sessions let go of before they were seen applied: job id -> user id.
        self._left: OrderedDict[int, str] = OrderedDict()
        self._left_lock = threading.Lock()  # a session is freed on whatever thread

    def attach(self, session: Attached) -> None:
        self._attached.add(session)

    def hold(self, session: Attached, holding: bool) -> None:
        """Keep an attached ``session`` alive while ``holding``; else let it be freed."""
        if holding and session in self._attached:
            self._holding.add(session)
        else:
            self._holding.discard(session)

    def detach(self, session: Attached) -> None:
        self._attached.discard(session)
        self._holding.discard(session)

    def of(self, user_id: str) -> list[Attached]:
        """The attached or held sessions of ``user_id``."""
        return [s for s in {*self._attached, *self._holding} if s.user_id == user_id]

    def left_behind(self, user_id: str, job_ids: Sequence[int]) -> None:
        """Remember ``job_ids`` of a session freed unclosed (the latest
        :data:`LEFT_BEHIND_JOBS` of all such jobs)."""
        with self._left_lock:
            for job_id in job_ids:
                self._left[job_id] = user_id
            while len(self._left) > LEFT_BEHIND_JOBS:
                self._left.popitem(last=False)

    def take(self) -> tuple[list[Attached], dict[str, set[int]]]:
        """Every session still attached or held, and the jobs left behind by user; both
        forgotten here."""
        sessions = list({*self._attached, *self._holding})
        self._attached, self._holding = weakref.WeakSet(), set()
        with self._left_lock:
            left, self._left = self._left, OrderedDict()
        users: dict[str, set[int]] = {}
        for job_id, user_id in left.items():
            users.setdefault(user_id, set()).add(job_id)
        return sessions, users


async def wait_left_behind(worker: MemoryWorker, users: dict[str, set[int]], timeout: float) -> int:
    """Wait (at most ``timeout`` seconds in all) for the jobs of sessions let go of; how
    many are still not applied."""
    deadline = time.monotonic() + timeout
    still = 0
    for user_id, ids in users.items():
        left_s = deadline - time.monotonic()
        if left_s <= 0:  # time is up: not read one by one, counted as left
            still += len(ids)
        elif not await worker.wait_until_done(user_id, ids, left_s):
            current = await worker.jobs.statuses(user_id, sorted(ids))
            still += sum(j.status in ("pending", "running") for j in current.values())
    return still


def left_at_exit(waiting: int, released: list[int], waited: float) -> str | None:
    """The one warning of a process that ends without ``Memory.aclose()``, naming what it
    leaves (None: nothing)."""
    left = []
    if waiting:
        left.append(
            f"{waiting} accepted turn(s) were not extracted before the process ended "
            f"(waited {waited:.0f} s)"
        )
    if released:
        ids = ", ".join(f"#{i}" for i in released)
        left.append(f"job(s) {ids}, claimed when it ended, were handed back")
    if not left:
        return None
    return (
        f"memory: {'; '.join(left)}; they are pending in the job table, and the next process "
        "that runs memory on this database extracts them"
    )


__all__ = ["LEFT_BEHIND_JOBS", "Attached", "Attachments", "left_at_exit", "wait_left_behind"]
