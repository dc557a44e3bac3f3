"""The background worker: job -> extractor -> engine, after the answer.

One worker per extractor of a :class:`~mem01session.memory.Memory`, shared by every session
using it; the ``Memory`` starts it and stops it. It claims the oldest job of each user under
a lease and hands each to :class:`~.processing.JobProcessor`, which shows the extractor the
user's most relevant active beliefs under aliases, screens the ops it proposes (secrets
out, whichever extractor proposed them), applies them, stores the turn's episodes and marks
the job done in the same transaction.

**Several users at once.** Up to :attr:`MemoryWorker.concurrency` jobs run at the same
time, each of another user (the claim leases at most one job per user, the oldest, so a
user's turns are still applied in the order they were said). While they run, what they ask
the embedder for (queries, passages, statements) is embedded together
(:class:`~.vectors.VectorBatch`). Each job in flight holds at most one database connection
at a time. The turns whose extraction finished meanwhile are written together, a group of
users' turns in one transaction with their jobs' completion (:mod:`.group_commit`).

**Failures.** A failed attempt is retried after a backoff (2 s, then 4 s by default) while
the user's later turns wait behind it, their order kept; after
:attr:`WorkerPolicy.max_attempts` tries (3) the turn is parked: ``failed``, its words kept
as episodes, visible in ``jobs list`` and the memory browser, retryable, and the user's
later turns go on (:mod:`.failed_jobs`). So a failing turn holds the ones behind it at most
``max_attempts`` extraction timeouts plus the backoffs. An attempt the database cut short
(unreachable, restarting) is not counted: the job waits, pending, until it answers. One
extraction may take :attr:`MemoryWorker.extract_timeout` seconds (``MEM01_LLM_TIMEOUT``).

**Runs first.** Before each step of a job (a claim, a read of its candidates, a commit)
the worker waits while a run of its process recalls or enqueues (:mod:`.foreground`): a
reply waits for those steps, not for the extraction of earlier turns. It waits until the
job's turn was queued :attr:`WorkerPolicy.yield_to_runs` seconds ago, no longer, so that
the turns the blocks cannot quote (:data:`~mem01session.session.barrier.SAID_TURNS`) do not
pile up behind runs that never pause.

**Claims of dead processes.** A worker's id names its process (:mod:`.owners`). Jobs left
``running`` by a process of this machine that is gone (killed, or ended without handing
them back) are taken back when a worker starts and at its next claims, not when their
lease ends; a process elsewhere is judged by its lease only. A live worker renews the
leases of the jobs it works on (:mod:`.heartbeat`), so that an extraction longer than the
lease is not claimed again by another worker.

A started worker lives on the event loop that started it (a ``Memory``'s own loop);
:meth:`MemoryWorker.wake`, :meth:`MemoryWorker.wait_until_done` and
:meth:`MemoryWorker.stop` may be called from any loop and are handed to that one.
"""

from __future__ import annotations

import asyncio
import contextlib
import time

from ..bounded import Bound, stop
from ..config import DEFAULT_LLM_TIMEOUT
from ..engine import BeliefEngine
from ..extraction.base import Extractor
from ..logs import describe, get_logger
from ..loops import elsewhere, run_on, running_loop
from ..spans import job_trace
from .failed_jobs import Failures
from .group_commit import GroupCommit
from .heartbeat import Heartbeat
from .job_records import Job
from .job_store import JobStore
from .notify import listen
from .owners import gone, new_worker_id, parse
from .policy import DEFAULT_CONCURRENCY, WorkerPolicy, declared_concurrency, declared_timeout
from .processing import JobProcessor

# Stopping hands back the worker's claims within this long; a database that does not
# answer by then (down, or a lock held elsewhere) leaves them to the next worker of this
# machine, or to their lease.
RELEASE_TIMEOUT_SECONDS = 2.0

log = get_logger(__name__)


class MemoryWorker:
    """Processes memory jobs in the background of this process."""

    def __init__(
        self,
        engine: BeliefEngine,
        extractor: Extractor,
        *,
        policy: WorkerPolicy | None = None,
        worker_id: str | None = None,
    ) -> None:
        self.engine = engine
        self.jobs = JobStore(engine.db)
        self.extractor = extractor
        self.policy = policy or WorkerPolicy()
        self.worker_id = worker_id or new_worker_id()
        self.extract_timeout = (
            self.policy.extract_timeout or declared_timeout(extractor) or DEFAULT_LLM_TIMEOUT
        )
        """Seconds one extraction may take before its attempt fails."""
        self.concurrency = (
            self.policy.concurrency or declared_concurrency(extractor) or DEFAULT_CONCURRENCY
        )
        """Jobs (each of another user) processed at once."""
        self._commits = GroupCommit(engine, self.jobs, self.worker_id, limit=self.concurrency)
        self._heartbeat = Heartbeat(
            engine.db.direct, self.worker_id, self.policy.lease, engine.clock
        )
        self._wake = asyncio.Event()
        self._progress = asyncio.Condition()
        self._task: asyncio.Task[None] | None = None
        self._listener: asyncio.Task[None] | None = None
        self._home: asyncio.AbstractEventLoop | None = None  # the loop it was started on
        self._stopping = False
        self._next_reap = 0.0  # time.monotonic() of the next look for dead owners' claims
        self.taken_back: list[int] = []  # jobs taken back from dead processes
        self._failures = Failures(
            engine, self.jobs, self.policy, self.worker_id, extractor.name, self.wake
        )
        self._steps = JobProcessor(
            engine,
            extractor,
            self.policy,
            worker_id=self.worker_id,
            extract_timeout=self.extract_timeout,
            jobs=self.jobs,
            commits=self._commits,
            failures=self._failures,
        )

    def __repr__(self) -> str:
        return f"MemoryWorker(id={self.worker_id!r}, extractor={self.extractor.name!r})"

    @property
    def last_error(self) -> str | None:
        """The last failure this worker logged (redacted), if any."""
        return self._failures.last_error

    @property
    def processed(self) -> int:
        """Jobs this worker applied (each turn written, its job done)."""
        return self._steps.processed

    @property
    def gave_way_s(self) -> float:
        """Seconds this worker waited for the runs of its process (:mod:`.foreground`)."""
        return self._steps.gave_way_s

    @property
    def transactions(self) -> int:
        """Write transactions committed (several users' turns written together count once)."""
        return self._commits.transactions

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def start(self) -> None:
        """Start the loop (idempotent); it resumes any job a dead process left behind."""
        if not self.running:
            self._stopping = False
            self._home = asyncio.get_running_loop()
            self._task = self._home.create_task(self._loop(), name=f"mem01-worker-{self.worker_id}")
            if self.policy.listen:
                self._listener = self._home.create_task(
                    listen(self.engine.db.url, self.wake), name=f"mem01-listen-{self.worker_id}"
                )

    def wake(self, after: float = 0.0) -> None:
        """Look for work now (or ``after`` seconds from now) instead of at the next poll
        (from any thread)."""
        home = self._home
        if home is not None and running_loop() is not home:
            with contextlib.suppress(RuntimeError):  # its loop is closed: nothing to wake
                home.call_soon_threadsafe(self.wake, after)
            return
        if after <= 0:
            self._wake.set()
        else:
            asyncio.get_running_loop().call_later(after, self._wake.set)

    async def stop(self) -> list[int]:
        """Stop now and hand back what this worker claimed; the ids of the jobs handed back.

        A job interrupted mid-way goes back to ``pending`` (the attempt not counted), so
        any process can take it at once; nothing already applied is undone (a job is
        marked done in the transaction that applies it). If the database cannot be
        reached, the claims are taken back by the next worker of this machine, or lapse
        when their lease ends.
        """
        home = elsewhere(self._home)
        if home is not None:
            return await run_on(home, self.stop())
        task, self._task = self._task, None
        listener, self._listener = self._listener, None
        if listener is not None and listener.get_loop() is running_loop():
            listener.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await listener
        if task is not None and task.get_loop() is not running_loop():
            # Its loop is gone (or no longer runs): nothing can resume the task; what it
            # claimed is handed back from here.
            self._stopping = True
            task = None
        if task is not None:
            # The flag ends the loop even if a cancellation is swallowed mid-await.
            self._stopping = True
            self._wake.set()
            if not await stop(task):  # bounded: a cut statement may not wait for the server
                # Still applying a job, maybe: handing its claim back now could let another
                # worker apply it again. The lease (or the next worker here) takes it back.
                self._failures.record(
                    "worker: its task did not end when stopped (the database does not "
                    "answer); the jobs it claimed are taken back by the next worker of this "
                    "machine, or when their lease ends"
                )
                return []
        bound = Bound(RELEASE_TIMEOUT_SECONDS)
        try:
            released = await bound.run(self._release())
        except Exception as exc:
            why = bound.why(exc)
            self._failures.record(f"worker: could not release claimed jobs at stop: {why}")
            return []
        if released:
            log.info("worker %s released %d claimed job(s) at stop", self.worker_id, len(released))
        return released

    async def _release(self) -> list[int]:
        await self._failures.flush()
        return await self.jobs.release(self.worker_id, now=self.engine.clock())

    async def wait_progress(self, timeout: float) -> None:
        """Return after the next processed job, or after ``timeout`` seconds."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout), self._progress:
                await self._progress.wait()

    async def wait_until_done(self, user_id: str, pending: set[int], timeout: float | None) -> bool:
        """Process until none of the user's jobs ``pending`` is pending or running (True),
        or ``timeout`` seconds pass (False). Jobs other processes finish count too."""
        home = elsewhere(self._home)
        if home is not None:
            return await run_on(home, self.wait_until_done(user_id, pending, timeout))
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            self.wake()
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return False
            step = min(0.05, left) if left is not None else 0.05
            if self.running:
                await self.wait_progress(step)
            else:  # another process's worker does the work: only the table can tell
                await asyncio.sleep(step)
            current = await self.jobs.statuses(user_id, sorted(pending))
            pending = {i for i, j in current.items() if j.status in ("pending", "running")}
            if not pending:
                return True

    async def run_once(self) -> int:
        """Claim up to :attr:`concurrency` jobs (each of another user) and
        process them at once; returns how many were processed."""
        await self._housekeeping()
        claimed = await self._claim(self.concurrency)
        if claimed:
            await asyncio.gather(*(self._run(job) for job in claimed))
        return len(claimed)

    async def _claim(self, limit: int) -> list[Job]:
        return await self.jobs.claim(
            self.worker_id, now=self.engine.clock(), lease=self.policy.lease, limit=limit
        )

    async def _loop(self) -> None:
        """Keep up to ``concurrency`` jobs in flight: claim when slots are free (a few at a
        time, so that one claim serves several jobs), wait for a job to end, a wake, or the
        poll interval."""
        flying: set[asyncio.Task[None]] = set()
        refill = max(1, self.concurrency // 4)
        try:
            # A database closed under the worker ends it quietly: nothing is left to claim.
            while not self._stopping and not self.engine.db.closed:
                free = self.concurrency - len(flying)
                idle = False
                if free >= refill or not flying:
                    self._wake.clear()  # before the claim: a wake during it is kept
                    try:
                        await self._steps.give_way()
                        await self._housekeeping()
                        claimed = await self._claim(free)
                    except asyncio.CancelledError:
                        raise
                    except Exception as exc:  # database down: keep trying, never crash
                        self._failures.record(f"worker: {describe(exc)}")
                        with contextlib.suppress(Exception):
                            await self.engine.db.revive()  # an embedded server that stopped
                        claimed = []
                    for job in claimed:
                        flying.add(asyncio.create_task(self._run(job)))
                    idle = len(claimed) < free  # nothing more to claim for now
                if len(flying) == self.concurrency or not idle:
                    done, flying = await asyncio.wait(flying, return_when="FIRST_COMPLETED")
                    continue
                waker = asyncio.create_task(self._woken())
                try:
                    done, _ = await asyncio.wait(
                        {waker, *flying},
                        timeout=self.policy.poll_interval,
                        return_when="FIRST_COMPLETED",
                    )
                finally:
                    waker.cancel()
                flying.difference_update(done)
        finally:
            for task in flying:
                task.cancel()
            if flying:
                await asyncio.gather(*flying, return_exceptions=True)
            await self._heartbeat.aclose()
            await self._commits.aclose()

    async def _woken(self) -> None:
        await self._wake.wait()

    async def _run(self, job: Job) -> None:
        with job_trace(job.id, self.extractor.name, job.attempts), self._heartbeat.holding(job):
            await self._steps.process(job)
        async with self._progress:
            self._progress.notify_all()

    async def _housekeeping(self) -> None:
        """Before a claim: record the failures not yet recorded, and (at start, then at
        most once per poll interval) take back the claims of dead processes."""
        await self._failures.flush()
        if time.monotonic() < self._next_reap:
            return
        self._next_reap = time.monotonic() + self.policy.poll_interval
        dead = [owner for owner in await self.jobs.running_owners() if gone(owner)]
        taken = await self.jobs.take_back(dead, now=self.engine.clock())
        if taken:
            self.taken_back += taken
            names = ", ".join(sorted({_process_of(owner) for owner in dead}))
            log.warning(
                "worker %s took back job(s) %s, claimed by a process that is gone (%s)",
                self.worker_id,
                ", ".join(f"#{i}" for i in taken),
                names,
            )


def _process_of(owner_id: str) -> str:
    owner = parse(owner_id)
    return f"pid {owner.pid} on {owner.host}" if owner is not None else owner_id


__all__ = ["MemoryWorker", "WorkerPolicy"]
