"""Group commit: the worker writes the turns whose extraction finished together.

Each job in flight, once its ops are ready, hands its batch here and waits. While one
group's transaction runs, the batches that become ready queue; the next group takes them
all (at most one per user: a user's turns stay in order), so the worker needs no timer
and a lone turn is written at once. A group is one transaction
(:func:`~mem01session.engine.group.apply_group`) that also marks its jobs done; if it
fails, its turns are written one by one, each meeting its own error (an erased user, a
target gone, a job no longer leased) alone.

On a database distributed by user (Citus) every group holds one turn: statements over
several users would cross shards.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass

from ..engine import BeliefEngine
from ..engine.write import Prepared
from .job_records import Job
from .job_store import JobStore


@dataclass(frozen=True)
class Ready:
    """A job whose batch is ready to write, and what its extraction cost."""

    job: Job
    batch: Prepared
    usage: Mapping[str, int]
    notes: tuple[str, ...] = ()  # what the extraction left out, and why


# Transactions in flight at once: while one waits for the server, another is being sent.
WRITERS = 2


class GroupCommit:
    """Writes ready jobs' batches, several users' in one transaction (see the module)."""

    def __init__(self, engine: BeliefEngine, jobs: JobStore, worker_id: str, limit: int) -> None:
        self.engine = engine
        self.jobs = jobs
        self.worker_id = worker_id
        self.limit = max(1, limit)
        self.groups = 0  # transactions that wrote more than one job
        self.transactions = 0  # transactions committed
        self._queue: list[tuple[Ready, asyncio.Future[None]]] = []
        self._writers: set[asyncio.Task[None]] = set()

    async def write(self, ready: Ready) -> None:
        """Write ``ready``'s batch and mark its job done; returns once committed, raises
        what writing it alone raised."""
        done = asyncio.get_running_loop().create_future()
        self._queue.append((ready, done))
        # A writer that found the queue empty is done at once, though its removal from
        # the set comes later (a callback): judged by done(), never by the set's size.
        self._writers = {w for w in self._writers if not w.done()}
        if len(self._writers) < WRITERS:
            self._writers.add(asyncio.create_task(self._write_all()))
        await done

    async def aclose(self) -> None:
        """Stop writing (a group in its transaction rolls back); its waiters are cancelled."""
        writers, self._writers = self._writers, set()
        for writer in writers:
            writer.cancel()
        await asyncio.gather(*writers, return_exceptions=True)

    async def _write_all(self) -> None:
        group: list[tuple[Ready, asyncio.Future[None]]] = []
        try:
            while self._queue:
                group = self._take()
                if group:
                    await self._commit(group)
        finally:
            for _, done in [*group, *self._queue]:
                if not done.done():
                    done.cancel()
            self._queue = [(r, d) for r, d in self._queue if not d.done()]

    def _take(self) -> list[tuple[Ready, asyncio.Future[None]]]:
        limit = self.limit if self.engine.groups_writes else 1
        group: list[tuple[Ready, asyncio.Future[None]]] = []
        rest: list[tuple[Ready, asyncio.Future[None]]] = []
        users: set[str] = set()
        for ready, done in self._queue:
            if done.done():  # its job was cancelled while waiting
                continue
            if len(group) < limit and ready.job.user_id not in users:
                users.add(ready.job.user_id)
                group.append((ready, done))
            else:
                rest.append((ready, done))
        self._queue = rest
        return group

    async def _commit(self, group: list[tuple[Ready, asyncio.Future[None]]]) -> None:
        if len(group) > 1:
            try:
                await self._apply([ready for ready, _ in group])
            except asyncio.CancelledError:
                raise
            except Exception:  # one turn's error: each alone, below
                pass
            else:
                self.groups += 1
                for _, done in group:
                    _settle(done, None)
                return
        for ready, done in group:
            try:
                await self._apply([ready])
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                _settle(done, exc)
            else:
                _settle(done, None)

    async def _apply(self, group: list[Ready]) -> None:
        hook = self.jobs.done_many_hook(
            [(r.job, r.usage, r.notes) for r in group], self.worker_id, now=self.engine.clock()
        )
        await self.engine.apply_group([r.batch for r in group], hook)
        self.transactions += 1


def _settle(done: asyncio.Future[None], error: Exception | None) -> None:
    if done.done():
        return
    if error is None:
        done.set_result(None)
    else:
        done.set_exception(error)


__all__ = ["GroupCommit", "Ready"]
