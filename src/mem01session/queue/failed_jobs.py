"""A worker's failed jobs: try again after a backoff, or park them, and record it.

A failed attempt is retried after :meth:`WorkerPolicy.backoff` while the user's later turns
wait behind it; after :attr:`WorkerPolicy.max_attempts` tries the turn is parked (``failed``,
retryable by hand) with its words kept as episodes, and the user's later turns go on. Some
failures are not worth another try: an erased user's turn, and an embedder that answers in
the wrong shape (it would again; the operator retries once the setting is fixed). A failure
the database could not take (it was gone) is kept and recorded first thing once it answers
again, so that the job does not wait for its lease to end.

An attempt cut short by the database itself (unreachable, restarting, the connection lost:
:func:`~mem01session.errors.database_unreachable`) is an outage, not the turn's fault: the
job goes back to ``pending`` with the attempt not counted, to be taken up again once the
database answers (the worker's claims fail meanwhile, and it waits a poll interval
between them).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import NamedTuple

from ..engine import BeliefEngine
from ..engine.episodes import Utterance
from ..engine.ops import Provenance
from ..errors import EmbeddingError, InvalidOpError, UserErasedError, database_unreachable
from ..extraction.base import Turn
from ..logs import describe, get_logger
from ..secrets.redaction import redact
from ..spans import job_note
from .job_records import Job
from .job_store import JobStore
from .policy import WorkerPolicy

log = get_logger(__name__)


def utterances(turn: Turn) -> list[Utterance]:
    """The turn's messages as the engine keeps them as episodes (it applies its policy),
    each user message with the assistant message it came after (:attr:`Turn.before` for
    the first), if no other user message came between."""
    out: list[Utterance] = []
    answered = turn.before or None
    for index, m in enumerate(turn.messages):
        context = answered if m.role == "user" else None
        out.append(Utterance(index, m.role, m.text, m.item_ref, context))
        answered = (m.text or None) if m.role == "assistant" else None
    return out


class _Failure(NamedTuple):
    """A failed attempt to record: back to pending at ``retry_at`` (parked when None)."""

    job: Job
    message: str
    retry_at: datetime | None
    erased: bool = False
    counted: bool = True  # False: the database cut it short, the attempt is given back


class Failures:
    """What one worker does with its failed attempts; :attr:`last_error` is the latest."""

    def __init__(
        self,
        engine: BeliefEngine,
        jobs: JobStore,
        policy: WorkerPolicy,
        worker_id: str,
        extractor_name: str,
        wake: Callable[[float], None],
    ) -> None:
        self.engine = engine
        self.jobs = jobs
        self.policy = policy
        self.worker_id = worker_id
        self.extractor_name = extractor_name
        self.wake = wake  # the worker looks again once a retry is due
        self.last_error: str | None = None
        # Failures the database could not take yet.
        self._unrecorded: dict[int, _Failure] = {}

    async def fail(self, job: Job, exc: BaseException) -> None:
        """``job``'s attempt failed with ``exc``: schedule its retry or park it; an attempt
        the database cut short goes back to pending, not counted."""
        message = describe(exc)
        if database_unreachable(exc):
            job_note(outcome="interrupted", error=type(exc).__name__)
            self.record(
                f"job {job.id} interrupted: the database is unreachable ({message}); it is "
                "taken up again once the database answers, this attempt not counted"
            )
            await self._keep(_Failure(job, message, self.engine.clock(), counted=False))
            return
        erased = isinstance(exc, UserErasedError)
        # An embedding server that answers in the wrong shape does so again next time: the
        # job waits for the operator (jobs retry, once the setting is fixed). An embedding
        # process that died is another matter: the next try starts a new one.
        permanent = erased or (isinstance(exc, EmbeddingError) and not exc.retryable)
        retry_at = None
        if not permanent and job.attempts < self.policy.max_attempts:
            delay = self.policy.backoff(job.attempts)
            retry_at = self.engine.clock() + timedelta(seconds=delay)
            self.wake(delay)  # the user's later turns wait for this retry
        kind = "invalid ops" if isinstance(exc, InvalidOpError) else type(exc).__name__
        job_note(outcome="failed", error=kind)
        self.record(f"job {job.id} failed ({kind}): {message}")
        if retry_at is None and not permanent and await self._keep_words(job, message):
            return
        await self._keep(_Failure(job, message, retry_at, erased))

    async def _keep(self, failure: _Failure) -> None:
        """Record ``failure`` now, or once the database answers again."""
        self._unrecorded[failure.job.id] = failure
        with contextlib.suppress(Exception):
            await self.flush()

    async def flush(self) -> None:
        """Record the failures not yet recorded (raises while the database is down).

        Each is taken out before it is recorded, so that two callers at once (a job's
        failure, the loop's housekeeping) never record one twice."""
        for job_id in list(self._unrecorded):
            entry = self._unrecorded.pop(job_id, None)
            if entry is None:
                continue
            try:
                await self.jobs.fail(
                    entry.job,
                    self.worker_id,
                    entry.message,
                    now=self.engine.clock(),
                    retry_at=entry.retry_at,
                    forget_text=entry.erased,  # an erased user's words are not kept, even failed
                    counted=entry.counted,
                )
            except BaseException:
                self._unrecorded.setdefault(job_id, entry)
                raise

    def record(self, message: str) -> None:
        """Log ``message`` (redacted) unless it repeats the last one; it becomes
        :attr:`last_error`."""
        message = redact(message)
        if message != self.last_error:
            log.warning("%s", message)
        self.last_error = message

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
                    extractor=self.extractor_name,
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


__all__ = ["Failures", "utterances"]
