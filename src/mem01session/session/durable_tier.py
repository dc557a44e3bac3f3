"""The durable tier as one session sees it: the user's memory, reached fail-open.

:class:`DurableTier` holds what a :class:`~mem01session.session.Mem01Session` needs of
the shared :class:`~mem01session.memory.Memory`: the turns on their way to the job table
(:class:`~mem01session.queue.buffer.TurnBuffer`), the jobs this session is still waiting
for, barriers, and the failure policy (:class:`~.failures.FailurePolicy`): by default a
failure is recorded (``last_error``, one warning per kind) and the conversation goes on;
with ``strict`` it raises :class:`~mem01session.errors.Mem01MemoryError`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
import weakref
from collections.abc import Sequence

from ..bounded import Bound
from ..checks import check_timezone
from ..engine import BeliefEngine
from ..engine.records import RecallRequest, RecallResult
from ..errors import (
    ConfigError,
    DatabaseError,
    Mem01MemoryError,
    MemoryClosedError,
    connection_lost,
)
from ..logs import describe, get_logger
from ..queue import MemoryWorker
from ..queue.buffer import TurnBuffer
from ..queue.carried_vectors import Known
from ..queue.foreground import FOREGROUND
from ..queue.progress import fetch_progress, progress_probe, run_probe
from ..queue.turns import TurnMessage
from .barrier import SAID_TURNS, budget, noted, still_queued, wait_end
from .failure_policy import FailurePolicy
from .host import SessionHost
from .watched import WatchedJobs

log = get_logger(__name__)

ANSWER_GRACE_SECONDS = 0.05
CLOSE_RETRY_SECONDS = 0.25
"""Between attempts to hand held turns over at close while the database cannot be reached."""


async def retry_pause() -> None:
    """The wait between two attempts at close (a function: a test ends the outage here)."""
    await asyncio.sleep(CLOSE_RETRY_SECONDS)


class DurableTier:
    """One user's durable memory, as used by one session."""

    def __init__(
        self,
        host: SessionHost,
        user_id: str,
        session_id: str,
        *,
        strict: bool,
        recall_wait: float,
        timezone: str | None = None,
        owns_memory: bool = False,
    ) -> None:
        self.host = host
        self.user_id = user_id
        self.session_id = session_id
        self.failures = FailurePolicy(strict)
        self.recall_wait = recall_wait
        self.timezone = timezone  # the user's IANA zone (the setter resolves it)
        self.last_recall: RecallResult | None = None
        self.waited_ms = 0.0  # how long the last recall waited for the user's turns
        self.last_jobs: list[int] = []  # the jobs the last enqueue made
        self._buffer = TurnBuffer(user_id, session_id)
        self._jobs = WatchedJobs()  # this session's jobs not yet seen done
        self._flushed_at = host.now()
        self._engine: BeliefEngine | None = None  # the memory's engine, once it opened
        self._step = ""  # what the current recall or enqueue is doing (for its error)
        self._read: RecallResult | None = None  # the current recall's last read
        self._recall_failure: str | None = None  # why the current run's recall failed
        host.attach(self)
        # Freed unclosed (a server's session per conversation): its memory still waits for
        # its jobs when it closes, as it would for an open session's; a memory of its own
        # closes then, in the background, instead of keeping its pools and threads.
        self._freed = weakref.finalize(self, _left_behind, host, user_id, self._jobs, owns_memory)
        self._freed.atexit = False

    @property
    def timezone(self) -> str | None:
        """The user's IANA zone (None: UTC), as :class:`.options.SessionOptions` checked it."""
        return self._timezone

    @timezone.setter
    def timezone(self, name: str | None) -> None:
        self._zone = None if name is None else check_timezone("timezone", name)
        self._timezone = name

    async def engine_or_raise(self) -> BeliefEngine:
        """The engine, or :class:`Mem01MemoryError` saying why there is none."""
        try:
            return await self.host.engine()
        except Exception as exc:
            raise Mem01MemoryError(f"memory is unavailable: {describe(exc)}") from None

    # -- turns ---------------------------------------------------------------------------

    @property
    def unsent(self) -> int:
        return self._buffer.unsent

    @property
    def dropped(self) -> int:
        return self._buffer.dropped

    async def take_turn(self, messages: Sequence[TurnMessage]) -> None:
        """Hold input until its answer; enqueue each completed turn (fail-open), within
        the run's budget (:func:`.barrier.budget`): a turn that cannot be stored by then
        stays here and is sent with the next one."""
        now = self.host.now()
        if self._zone is not None:  # the user's local time: "yesterday" is read from it
            now = now.astimezone(self._zone)
        if not self._buffer.add(messages, now):
            self._keep()  # input waiting for its answer
            return
        mark = self.failures.count
        # This run's recall failed: its failure stays the news, with the enqueue's after it.
        recall_failure, self._recall_failure = self._recall_failure, None
        limit = budget(self.recall_wait)
        within = None
        try:
            await self._open()
            within = Bound(limit)  # made once the memory is open: opening is not budgeted
            with FOREGROUND.marked():  # the worker gives way (.foreground)
                await within.run(self._send())
        except Exception as exc:
            # Strict: the caller hears of it, so nothing is kept behind its back.
            if self.failures.strict:
                self._buffer.discard()
                self._keep()
            if within is not None and within.expired:
                kept = (
                    "dropped (strict)"
                    if self.failures.strict
                    else "kept and sent with the next one"
                )
                message, cause = f"enqueue {self._gave_up(limit)}; the turn is {kept}", None
            else:
                cause = describe(exc)
                message = f"enqueue failed: {cause}"
            before = f"{recall_failure}; then " if recall_failure is not None else ""
            self.failures.record(before + message, "enqueue", cause)
        else:
            self.failures.recovered(mark, "enqueue")

    async def _open(self) -> BeliefEngine:
        """The memory's engine, outside any budget: opening the memory (about a second for
        the embedded server, more on its very first start), starting its worker and
        loading the embedding model are paid once per process, by the first run or at
        start-up (``Memory.open``, then the host's ``ready``). Fails at once while the
        embedded server is being restarted: one run waited for that already, and a
        restart can take seconds."""
        engine = self._engine = await self.host.ready()
        if engine.db.restarting:
            raise DatabaseError("the embedded PostgreSQL had stopped and is being restarted")
        return engine

    def _gave_up(self, limit: float) -> str:
        """Why an operation was abandoned at the end of its budget of ``limit`` seconds."""
        restarting = self._engine is not None and self._engine.db.restarting
        why = "; the embedded PostgreSQL had stopped and is being restarted" if restarting else ""
        return f"gave up after {limit:g} s while {self._step or 'starting'}{why}"

    async def _send(self, *, release: bool = False) -> None:
        """Enqueue completed turns (and, with ``release``, held input too), oldest first."""
        if release:
            self._buffer.release()
        if not self._buffer.unsent:
            return
        try:
            jobs = await self.host.jobs()
            self._step = "storing turns"
            await self._buffer.send(
                jobs,
                known=self._known_vectors(),
                model=self._model(),
                notify=not self.host.run_worker,  # a worker elsewhere is told at once
            )
        except Exception:
            # Strict: the caller hears of the failure, so nothing is kept behind its back.
            if self.failures.strict:
                self._buffer.discard()
            raise
        finally:
            self.last_jobs = [job_id for job_id, _ in self._buffer.enqueued]
            for job_id, user_text in self._buffer.enqueued:
                self._jobs.add(job_id, user_text)
            self._buffer.enqueued.clear()
            refusals, self._buffer.refusals = self._buffer.refusals, []
            self._keep()
        for refused, reason in refusals:
            self._jobs.refused(refused, reason)
            self.failures.record(f"enqueue failed: {reason}", "enqueue")
        # A short grace lets the run that stored the answer return before extraction
        # competes with it for this event loop; barriers still wake the worker at once.
        await self.host.turns_queued(after=ANSWER_GRACE_SECONDS)

    def retract(self, messages: Sequence[TurnMessage]) -> None:
        """The application removed these from the transcript (``pop_item``): those still
        held, waiting for an answer, are not remembered."""
        for message in reversed(messages):
            if not self._buffer.retract(message):
                break
        self._keep()

    def cleared(self) -> None:
        """The application cleared the transcript: input not yet answered is not
        remembered (completed turns are enqueued, or kept to be)."""
        self._buffer.forget_held()
        self._keep()

    def _keep(self) -> None:
        """Held by the memory while this holds turns (see ``SessionHost.hold``)."""
        self.host.hold(self, self._buffer.holding or self._buffer.unsent > 0)

    def _known_vectors(self) -> Known | None:
        """With the worker in another process, the vectors this process's embedder still
        has of the turn's words go with it (the worker would embed them again)."""
        if self.host.run_worker or self._engine is None:
            return None
        known: Known | None = getattr(self._engine.embedder, "recent_vector", None)
        return known

    def _model(self) -> str:
        return self._engine.embedder.name if self._engine is not None else ""

    def see_history(self, items: Sequence[object]) -> None:
        """The inner session returned ``items`` for a run: its model reads those (a run
        waits for none of the turns there, see :class:`.watched.WatchedJobs`)."""
        self._jobs.see_history(items)

    # -- reads and barriers --------------------------------------------------------------

    async def recall(self, request: RecallRequest, *, during_run: bool) -> RecallResult | None:
        """Recall within the run's budget: a run waits for none of the user's queued turns
        (their words are quoted, see :mod:`.barrier`), an explicit recall for all of them,
        at most ``recall_wait``; None when memory is unavailable (strict: raises)."""
        mark = self.failures.count
        # In a run, turns of this conversation that the model reads anyway are not waited
        # for; the block says that many turns may be newer than its records.
        visible = self._jobs.visible() if during_run else frozenset()
        if visible:
            request = dataclasses.replace(request, newer_turns=len(visible))
        if during_run:
            request = dataclasses.replace(
                request, conversation=self.session_id, conversation_text=self._jobs.seen_text
            )
        self.waited_ms = 0.0
        self._step, self._read, self._recall_failure = "", None, None
        limit = budget(self.recall_wait)
        within = None
        try:
            engine = await self._open()
            within = Bound(limit)  # made once the memory is open: opening is not budgeted
            result = await within.run(
                self._recall(engine, request, visible, during_run, time.monotonic() + limit)
            )
        except (Mem01MemoryError, ConfigError):  # strict, or a bad argument: the caller's
            raise
        except Exception as exc:
            cut_short = within is not None and within.expired
            if not cut_short or self._read is None:
                cause = None if cut_short else describe(exc)
                what = self._gave_up(limit) if cause is None else f"failed: {cause}"
                without = "; this run answered without memory" if during_run else ""
                self.failures.record(f"recall {what}{without}", "recall", cause)
                self._recall_failure = self.failures.last_error if during_run else None
                return None
            result = self._read  # the read after the wait was cut short: the one before
        self.failures.recovered(mark, "recall", "enqueue")
        # Turns still queued (not waited for, or not done in time) whose words the block
        # does not quote are missing from it.
        stale = result.pending_turns > result.pending_quoted
        result = dataclasses.replace(result, stale=stale, waited_ms=self.waited_ms)
        self.last_recall = result
        return result

    async def _recall(
        self,
        engine: BeliefEngine,
        request: RecallRequest,
        visible: frozenset[int],
        during_run: bool,
        deadline: float,
    ) -> RecallResult:
        """:meth:`recall` within its budget (``deadline``, on ``time.monotonic``).

        A run reads once: the user's turns still queued that its model does not read are
        not waited for, their words close the block (see :mod:`.barrier`). An explicit
        recall waits for them (what is left of the budget) and reads again."""
        # In a run, the held input is the current turn: it is in the model input already,
        # and enqueueing it now would make this recall wait for its extraction.
        await self._send(release=not during_run)
        worker = await self.host.worker()  # started by _open: queued turns are taken
        # The read also says which of the user's jobs are unfinished: in the steady
        # state none is, and the barrier costs nothing more.
        self._step = "reading"
        began = time.monotonic()
        probe = (
            run_probe(self._jobs.ids, visible, SAID_TURNS)
            if during_run
            else progress_probe(self._jobs.ids)
        )
        result, progress = await engine.recall_probed(self.user_id, request, probe)
        reading = time.monotonic() - began
        waiting = progress.unfinished - visible
        self._read = noted(engine, result, request, len(waiting), progress.said)
        if during_run or not waiting:
            self._report(progress.watched)
            return self._read
        self._step = "waiting for the user's queued turns"
        # What is left of the budget, less the time of the read that follows the wait.
        timeout = min(self.recall_wait, deadline - time.monotonic() - reading)
        began = time.monotonic()
        if timeout > 0:
            await worker.wait_until_done(self.user_id, set(waiting), timeout)
        self.waited_ms = (time.monotonic() - began) * 1000
        self._step = "reading after the wait"
        probe = progress_probe(self._jobs.ids)  # memory changed meanwhile
        result, progress = await engine.recall_probed(self.user_id, request, probe)
        self._report(progress.watched)
        return noted(engine, result, request, len(progress.unfinished - visible))

    async def flush(self, timeout: float | None) -> bool:
        """Wait for every turn of the user accepted so far (from any session or process),
        at most ``timeout`` seconds in all, whatever the database does (:mod:`.barrier`).

        True when all of them are applied and none failed since the previous flush; False
        on timeout, when one failed, or when memory is unavailable (``last_error`` says
        which). With ``strict`` the failures raise :class:`Mem01MemoryError` instead.
        """
        mark = self.failures.count
        self._step = "opening the memory"
        within = Bound(timeout)

        async def flushed() -> bool:
            await self.host.engine()
            await self._send(release=True)
            return await self._barrier(wait_end(timeout), report=True)

        try:
            done = await within.run(flushed())
        except Mem01MemoryError:
            raise
        except Exception as exc:
            if within.expired:
                assert timeout is not None
                self.failures.record(
                    f"flush gave up after {timeout:g} s while {self._step}", "flush"
                )
            else:
                self.failures.failed("flush", exc)
            return False
        failed = self._jobs.take_failed()
        self._flushed_at = self.host.now()
        if failed:
            self.failures.last_error = (
                f"{len(failed)} accepted turn(s) failed since the last flush; "
                + ("; ".join(failed[-3:]))
            )
        elif done:
            self.failures.recovered(mark)
        else:  # not a failure: the turns stay queued and are applied later
            self.failures.last_error = still_queued(timeout, self.host.run_worker)
        return done and not failed

    def erasing(self) -> None:
        """The user's memory is about to be erased (``Memory.erase``): the turns never
        enqueued go with it, and the jobs waited for are deleted."""
        self._buffer.discard()
        self._keep()
        self._jobs.clear()

    async def close(self, flush_timeout: float) -> int:
        """Give accepted turns a bounded chance to be applied (``flush_timeout`` seconds in
        all, whatever the database does); then let go of the memory. Returns how many of
        this session's accepted turns are still not applied.

        Turns that cannot be enqueued are lost (and counted in ``dropped``); enqueued ones
        stay durable and resume at the next start. Without a worker in this process
        (``run_worker=False``) the turns are only enqueued: the workers elsewhere apply
        them whenever this process ends, so it does not wait for them."""
        self.host.detach(self)
        self._freed.detach()  # this close gives its jobs their chance
        self._buffer.release()
        if self.host.closed and not self._buffer.unsent:
            return 0  # closed again, after its memory: nothing was accepted since
        left = 0
        self._step = "opening the memory"
        within = Bound(flush_timeout)

        async def unapplied() -> int:
            await self._send_at_close()
            if self.host.run_worker and not await self._barrier(wait_end(flush_timeout)):
                self._step = "reading the turns' jobs"
                return await self._unapplied()
            return 0

        try:
            if self._buffer.unsent or self._jobs.ids:
                try:
                    left = await within.run(unapplied())
                except Exception as exc:
                    left = len(self._jobs.ids)
                    if within.expired:
                        self.failures.record(
                            f"flush at close gave up after {flush_timeout:g} s while {self._step}",
                            "flush",
                        )
                    else:
                        self.failures.failed("flush", exc)
        finally:
            if self._buffer.unsent:
                lost = self._buffer.discard()
                self._buffer.dropped += lost
                self._keep()
                log.warning(
                    "memory: %d turn(s) could not be enqueued before close and are lost", lost
                )
        return left

    async def _send_at_close(self) -> None:
        """:meth:`_send`, tried again while the database cannot be reached: at close, the
        turns held through an outage get the whole flush budget (the caller bounds it), not
        one attempt that fails if the database is not back yet."""
        while True:
            try:
                await self._send()
                return
            except MemoryClosedError:
                raise
            except Exception as exc:
                if self.failures.strict or not connection_lost(exc):
                    raise
            await retry_pause()

    async def _unapplied(self) -> int:
        """How many of this session's jobs are still pending or running."""
        db = (await self.host.engine()).db
        progress = await fetch_progress(db, self.user_id, self._jobs.ids)
        return sum(status in ("pending", "running") for status, _ in progress.watched.values())

    async def _barrier(self, until: float | None, *, report: bool = False) -> bool:
        """Wait for the user's jobs accepted before now (True: none left), until ``until``
        (``time.monotonic``; None: no end). With ``report``, surface failed
        jobs: this session's, and the user's since the last flush (strict: raise)."""
        db = (await self.host.engine()).db
        since = self._flushed_at if report else None
        self._step = "reading the user's jobs"
        progress = await fetch_progress(db, self.user_id, self._jobs.ids, failed_since=since)
        done = True
        if progress.unfinished:
            worker: MemoryWorker = await self.host.worker()
            self._step = "waiting for the user's queued turns"
            timeout = None if until is None else max(0.0, until - time.monotonic())
            done = await worker.wait_until_done(self.user_id, set(progress.unfinished), timeout)
            if report:
                self._step = "reading the user's jobs after the wait"
                progress = await fetch_progress(
                    db, self.user_id, self._jobs.ids, failed_since=since
                )
        if report:
            self._report(progress.watched, progress.failed)
        return done

    def _report(
        self,
        statuses: dict[int, tuple[str, str | None]],
        failed: dict[int, str | None] | None = None,
    ) -> None:
        """Forget finished jobs; surface permanent failures, each once (strict: raise)."""
        for job_id, message in self._jobs.settle(statuses, failed):
            self._jobs.reported(job_id, message)
            self.failures.record(f"extraction failed: {message}", "extraction")


def _left_behind(host: SessionHost, user_id: str, jobs: WatchedJobs, close: bool) -> None:
    host.left_behind(user_id, list(jobs.ids))  # before the close looks for them
    if close:
        host.close_in_background()


__all__ = ["DurableTier"]
