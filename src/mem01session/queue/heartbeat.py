"""A worker's heartbeat: it renews the leases of the jobs it is working on.

A job is claimed under a lease (:attr:`WorkerPolicy.lease`) so that the claim of a worker
that died lapses; one extraction may take longer than that (``MEM01_LLM_TIMEOUT``). While
a worker holds jobs, every third of the lease one statement extends the leases of all of
them that are still its own (a job reclaimed, erased or finished meanwhile is left as it
is), so that another worker never claims a job a live worker is still working on. A worker
that died renews nothing: its claims lapse as before.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta

from ..db.direct import DirectPool
from ..logs import describe, get_logger
from .job_records import Job

log = get_logger(__name__)

# One statement for every job held; user_id leads, as every key does (on a cluster it
# names the shards to visit).
_RENEW = """
UPDATE memory_jobs SET lease_until = %(until)s
WHERE user_id = ANY(%(users)s) AND id = ANY(%(ids)s)
  AND status = 'running' AND lease_owner = %(w)s
RETURNING id"""


async def renew_leases(
    pool: DirectPool,
    jobs: list[Job],
    worker_id: str,
    *,
    now: datetime,
    lease: timedelta,
) -> set[int]:
    """Extend to ``now + lease`` the leases of ``jobs`` that ``worker_id`` still holds; the
    ids of those it renewed."""
    if not jobs:
        return set()
    rows = await pool.fetch(
        _RENEW,
        {
            "until": now + lease,
            "users": sorted({job.user_id for job in jobs}),
            "ids": [job.id for job in jobs],
            "w": worker_id,
        },
    )
    return {int(row["id"]) for row in rows}


class Heartbeat:
    """Renews the leases of the jobs a worker holds, while it holds any (see the module)."""

    def __init__(
        self,
        pool: DirectPool,
        worker_id: str,
        lease: timedelta,
        clock: Callable[[], datetime],
    ) -> None:
        self.pool = pool
        self.worker_id = worker_id
        self.lease = lease
        self.clock = clock
        self.interval = lease.total_seconds() / 3
        """Seconds between renewals: a lease outlives two renewals that fail."""
        self.renewals = 0  # statements that renewed at least one lease
        self._held: dict[int, Job] = {}
        self._task: asyncio.Task[None] | None = None
        self._renewing = False

    @contextlib.contextmanager
    def holding(self, job: Job) -> Iterator[None]:
        """Keep ``job``'s lease renewed while the block runs."""
        self._held[job.id] = job
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(
                self._beat(), name=f"mem01-heartbeat-{self.worker_id}"
            )
        try:
            yield
        finally:
            if self._held.get(job.id) is job:
                del self._held[job.id]
            # Asleep with nothing held: stop now. Renewing: it stops once its statement ends
            # (cut short, the statement would cost its connection).
            if not self._held and self._task is not None and not self._renewing:
                self._task.cancel()
                self._task = None

    async def aclose(self) -> None:
        """Stop renewing (the worker stops)."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _beat(self) -> None:
        while self._held:
            await asyncio.sleep(self.interval)
            held = list(self._held.values())
            if not held:
                return
            self._renewing = True
            try:
                renewed = await renew_leases(
                    self.pool, held, self.worker_id, now=self.clock(), lease=self.lease
                )
            except Exception as exc:  # the leases run on: the next beat tries again
                log.debug("worker %s: could not renew leases: %s", self.worker_id, describe(exc))
                continue
            finally:
                self._renewing = False
            self.renewals += bool(renewed)
            lost = [job.id for job in held if job.id not in renewed and job.id in self._held]
            if lost:
                log.debug("worker %s no longer holds job(s) %s", self.worker_id, lost)


__all__ = ["Heartbeat", "renew_leases"]
