"""The background worker: job -> extractor -> engine, after the answer.

One worker per extractor of a :class:`~mem01session.memory.Memory`, shared by every session
using it; the ``Memory`` starts it and stops it. It claims the oldest job of each user under
a lease, shows the extractor the user's most relevant active beliefs under aliases, screens
the ops it proposes (secrets out, whichever extractor proposed them), applies them, stores
the turn's episodes and marks the job done in the same transaction. Failures retry with
exponential backoff, then stay ``failed`` for inspection. Jobs left running by a dead
process are reclaimed once their lease expires.

A started worker lives on the event loop that started it (a ``Memory``'s own loop);
:meth:`MemoryWorker.wake`, :meth:`MemoryWorker.wait_until_done` and
:meth:`MemoryWorker.stop` may be called from any loop and are handed to that one.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta

from ..engine import BeliefEngine
from ..engine.episodes import Utterance
from ..engine.ops import Provenance, resolve_aliases
from ..engine.records import RecallRequest
from ..errors import EmbeddingError, InvalidOpError, UserErasedError
from ..extraction.base import Candidate, Extractor, Turn
from ..extraction.hygiene import screen
from ..logs import describe, get_logger
from ..loops import elsewhere, run_on, running_loop
from ..redaction import redact
from ..spans import job_note, job_trace, op_kinds
from .job_records import Job
from .jobs import JobLostError, JobStore

log = get_logger(__name__)


@dataclass(frozen=True)
class WorkerPolicy:
    """Leases, retries and timeouts of the worker."""

    lease: timedelta = timedelta(seconds=120)
    max_attempts: int = 5
    backoff_base: float = 2.0
    backoff_max: float = 300.0
    extract_timeout: float = 60.0
    poll_interval: float = 1.0
    candidates: int = 10
    keyed: int = 30  # 0: candidates from search only


def utterances(turn: Turn) -> list[Utterance]:
    """The turn's messages as the engine keeps them as episodes (it applies its policy)."""
    return [Utterance(index, m.role, m.text, m.item_ref) for index, m in enumerate(turn.messages)]


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
        self.worker_id = worker_id or f"{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self._wake = asyncio.Event()
        self._progress = asyncio.Condition()
        self._task: asyncio.Task[None] | None = None
        self._home: asyncio.AbstractEventLoop | None = None  # the loop it was started on
        self._stopping = False
        self.last_error: str | None = None
        self.processed = 0
        # Failed jobs whose failure could not be recorded (the database was gone): they
        # are still ``running`` under this worker's lease and are released first thing
        # once the database answers again, instead of waiting for the lease to expire.
        self._unreleased: dict[int, tuple[Job, str, datetime | None, bool]] = {}

    def __repr__(self) -> str:
        return f"MemoryWorker(id={self.worker_id!r}, extractor={self.extractor.name!r})"

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def start(self) -> None:
        """Start the loop (idempotent); it resumes any job a dead process left behind."""
        if not self.running:
            self._stopping = False
            self._home = asyncio.get_running_loop()
            self._task = self._home.create_task(self._loop(), name=f"mem01-worker-{self.worker_id}")

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

    async def stop(self) -> None:
        """Stop now and hand back what this worker claimed.

        A job interrupted mid-way goes back to ``pending`` (the attempt not counted), so
        any process can take it at once; nothing already applied is undone (a job is
        marked done in the transaction that applies it). If the database cannot be
        reached, the claims lapse when their lease ends.
        """
        home = elsewhere(self._home)
        if home is not None:
            return await run_on(home, self.stop())
        task, self._task = self._task, None
        if task is not None and task.get_loop() is not running_loop():
            # Its loop is gone (or no longer runs): nothing can resume the task; what it
            # claimed is handed back from here.
            self._stopping = True
            task = None
        if task is not None:
            # The flag ends the loop even if a cancellation is swallowed mid-await.
            self._stopping = True
            self._wake.set()
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        try:
            await self._release_failed()
            released = await self.jobs.release(self.worker_id, now=self.engine.clock())
        except Exception as exc:
            self._record(f"worker: could not release claimed jobs at stop: {exc}")
        else:
            if released:
                log.info("worker %s released %d claimed job(s) at stop", self.worker_id, released)

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
            await self.wait_progress(min(0.05, left) if left is not None else 0.05)
            current = await self.jobs.statuses(user_id, sorted(pending))
            pending = {i for i, j in current.items() if j.status in ("pending", "running")}
            if not pending:
                return True

    async def run_once(self) -> int:
        """Claim and process one batch of jobs; returns how many were processed."""
        await self._release_failed()
        now = self.engine.clock()
        claimed = await self.jobs.claim(self.worker_id, now=now, lease=self.policy.lease, limit=4)
        for job in claimed:
            with job_trace(job.id, self.extractor.name, job.attempts):
                await self._process(job)
        if claimed:
            async with self._progress:
                self._progress.notify_all()
        return len(claimed)

    async def _loop(self) -> None:
        # A database closed under the worker ends it quietly: nothing is left to claim.
        while not self._stopping and not self.engine.db.closed:
            try:
                if await self.run_once():
                    continue
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # database down: keep trying, never crash the app
                self._record(f"worker: {describe(exc)}")
                with contextlib.suppress(Exception):
                    await self.engine.db.revive()  # an embedded server that stopped
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.policy.poll_interval):
                    await self._wake.wait()

    async def _process(self, job: Job) -> None:
        try:
            turn = job.turn()
            query = " ".join(m.text for m in turn.messages if m.role == "user")
            candidates, aliases = await self._candidates(job.user_id, query)
            async with asyncio.timeout(self.policy.extract_timeout):
                extraction = await self.extractor.extract(turn, candidates, self.engine.clock())
            # Whichever extractor proposed them: secrets out, text clean (see hygiene.py).
            ops = resolve_aliases(screen(extraction.ops).ops, aliases)
            job_note(ops=len(ops), kinds=op_kinds([op.op for op in ops]))
            now = self.engine.clock()
            said = utterances(turn)
            if not ops and not any(self.engine.episode_policy.keeps(u.role) for u in said):
                await self.jobs.complete_without_ops(
                    job, self.worker_id, now=now, usage=extraction.usage
                )
            else:
                # The turn's ops, its episodes and the job's completion: one transaction.
                first_ref = next((m.item_ref for m in turn.messages if m.role == "user"), None)
                await self.engine.apply(
                    job.user_id,
                    ops,
                    provenance=Provenance(
                        session_id=job.session_id,
                        item_ref=first_ref,
                        observed_at=turn.observed_at,
                        extractor=self.extractor.name,
                        job_id=job.id,
                    ),
                    hook=self.jobs.done_hook(job, self.worker_id, now=now, usage=extraction.usage),
                    utterances=said,
                )
            self.processed += 1
            job_note(outcome="done")
        except JobLostError:
            job_note(outcome="lost")
            log.info("job %s was erased or reclaimed; dropping it", job.id)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            await self._fail(job, exc)

    async def _candidates(self, user_id: str, query: str) -> tuple[list[Candidate], dict[str, int]]:
        """The most relevant active beliefs plus every keyed one, under aliases b1, b2…"""
        found = [
            sb.belief
            for sb in await self.engine.search(
                user_id, RecallRequest(query), limit=self.policy.candidates
            )
        ]
        seen = {b.id for b in found}
        if self.policy.keyed:
            keyed = await self.engine.keyed(user_id, limit=self.policy.keyed)
            found += [b for b in keyed if b.id not in seen]
        candidates = [
            Candidate(alias=f"b{i}", content=b.content, key=b.key, valid_from=b.valid_from)
            for i, b in enumerate(found, start=1)
        ]
        return candidates, {c.alias: b.id for c, b in zip(candidates, found, strict=True)}

    async def _fail(self, job: Job, exc: BaseException) -> None:
        message = describe(exc)
        erased = isinstance(exc, UserErasedError)
        # An embedding server that answers in the wrong shape does so again next time: the
        # job waits for the operator (jobs retry, once the setting is fixed).
        permanent = erased or isinstance(exc, EmbeddingError)
        retry_at = None
        if not permanent and job.attempts < self.policy.max_attempts:
            delay = min(self.policy.backoff_max, self.policy.backoff_base**job.attempts)
            retry_at = self.engine.clock() + timedelta(seconds=delay)
        kind = "invalid ops" if isinstance(exc, InvalidOpError) else type(exc).__name__
        job_note(outcome="failed", error=kind)
        self._record(f"job {job.id} failed ({kind}): {message}")
        if retry_at is None and not permanent and await self._keep_words(job, message):
            return
        self._unreleased[job.id] = (job, message, retry_at, erased)
        with contextlib.suppress(Exception):
            await self._release_failed()

    async def _keep_words(self, job: Job, message: str) -> bool:
        """A turn that will not be extracted again (unless someone retries its job) keeps
        its words as episodes: marked failed in the transaction that stores them, so that
        what was said is never lost to a failing extractor. False if that failed too."""
        try:
            turn = job.turn()
            said = utterances(turn)
            if not any(self.engine.episode_policy.keeps(u.role) for u in said):
                return False
            await self.engine.apply(
                job.user_id,
                [],
                provenance=Provenance(
                    session_id=job.session_id,
                    observed_at=turn.observed_at,
                    extractor=self.extractor.name,
                    job_id=job.id,
                ),
                hook=self.jobs.fail_hook(job, self.worker_id, message, now=self.engine.clock()),
                utterances=said,
            )
        except asyncio.CancelledError:
            raise
        except Exception:
            return False
        return True

    async def _release_failed(self) -> None:
        """Record the failures not yet recorded (raises while the database is down)."""
        for job_id, (job, message, retry_at, erased) in list(self._unreleased.items()):
            await self.jobs.fail(
                job,
                self.worker_id,
                message,
                now=self.engine.clock(),
                retry_at=retry_at,
                forget_text=erased,  # an erased user's words are not kept, even as a failure
            )
            self._unreleased.pop(job_id, None)  # a concurrent call may have recorded it

    def _record(self, message: str) -> None:
        message = redact(message)
        if message != self.last_error:
            log.warning("%s", message)
        self.last_error = message


__all__ = ["MemoryWorker", "WorkerPolicy"]
