"""The durable tier as one session sees it: one user's memory, reached fail-open.

:class:`UserMemory` holds what a :class:`~mem01session.session.Mem01Session` needs of
PostgreSQL: the engine (opened on first use unless given), the turns on their way to the
job table (:class:`~mem01session.outbox.TurnOutbox`), the background worker, barriers,
and the failure policy. By default a failure is recorded (``last_error``, one warning
per kind) and the conversation goes on; with ``strict`` it raises
:class:`~mem01session.errors.Mem01MemoryError`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
from collections.abc import Sequence
from datetime import UTC, datetime

from . import jobs
from .config import Settings
from .engine import BeliefEngine
from .errors import ConfigError, Mem01MemoryError
from .extraction import Extractor
from .extraction.base import TurnMessage
from .outbox import TurnOutbox
from .records import EraseReceipt, RecallResult
from .redaction import get_logger, redact
from .worker import MemoryWorker, shared_worker, stop_workers

log = get_logger(__name__)

ANSWER_GRACE_SECONDS = 0.05


@dataclasses.dataclass(frozen=True)
class RecallRequest:
    """What to recall: the query and how (see :meth:`BeliefEngine.recall`)."""

    query: str
    max_tokens: int
    include_history: bool = False
    as_of: datetime | None = None
    explain: bool = False


class UserMemory:
    """One user's durable memory, as used by one session."""

    def __init__(
        self,
        user_id: str,
        session_id: str,
        *,
        engine: BeliefEngine | None,
        extractor: Extractor | None,
        settings: Settings | None,
        strict: bool,
        recall_wait: float,
    ) -> None:
        self.user_id = user_id
        self.strict = strict
        self.recall_wait = recall_wait
        self.last_error: str | None = None
        self.last_recall: RecallResult | None = None
        self._settings = settings
        self._engine = engine
        self._owns_engine = engine is None
        self._engine_lock = asyncio.Lock()
        self._extractor = extractor
        self._worker: MemoryWorker | None = None
        self._outbox = TurnOutbox(user_id, session_id)
        self._watched: list[int] = []  # this session's jobs not yet seen done
        self._reported: set[int] = set()
        self._warned: set[str] = set()

    # -- the engine and the worker -------------------------------------------------------

    async def engine(self) -> BeliefEngine:
        """The engine, opened on first use."""
        if self._engine is None:
            async with self._engine_lock:
                if self._engine is None:
                    self._engine = await BeliefEngine.open(self._settings)
        return self._engine

    async def engine_or_raise(self) -> BeliefEngine:
        """The engine, or :class:`Mem01MemoryError` saying why there is none."""
        try:
            return await self.engine()
        except Exception as exc:
            raise Mem01MemoryError(f"memory is unavailable: {describe(exc)}") from None

    def _now(self) -> datetime:
        return self._engine.clock() if self._engine is not None else datetime.now(UTC)

    @property
    def extractor(self) -> Extractor:
        """Chosen on first use: OpenAI when ``OPENAI_API_KEY`` is set, rules otherwise."""
        if self._extractor is None:
            from .extraction import default_extractor

            self._extractor = default_extractor(self._settings)
        return self._extractor

    def _started_worker(self, engine: BeliefEngine) -> MemoryWorker:
        if self._worker is None:
            self._worker = shared_worker(engine, self.extractor)
        self._worker.start()
        return self._worker

    # -- turns ---------------------------------------------------------------------------

    @property
    def unsent(self) -> int:
        return self._outbox.unsent

    @property
    def dropped(self) -> int:
        return self._outbox.dropped

    async def take_turn(self, messages: Sequence[TurnMessage]) -> None:
        """Hold input until its answer; enqueue each completed turn (fail-open)."""
        if not self._outbox.add(messages, self._now()):
            return
        try:
            await self._send()
        except Exception as exc:
            self.failed("enqueue", exc)

    async def _send(self, *, release: bool = False) -> None:
        """Enqueue completed turns (and, with ``release``, held input too), oldest first."""
        if release:
            self._outbox.release()
        if not self._outbox.unsent:
            return
        try:
            engine = await self.engine()
            sent = await self._outbox.send(engine.db)
        except Exception:
            if self.strict:  # the caller hears of the failure: nothing is kept behind its back
                self._outbox.discard()
            raise
        self._watched += sent
        # A short grace lets the run that stored the answer return before extraction
        # competes with it for this event loop; barriers still wake the worker at once.
        self._started_worker(engine).wake(after=ANSWER_GRACE_SECONDS)

    # -- reads and barriers --------------------------------------------------------------

    async def recall(self, request: RecallRequest, *, during_run: bool) -> RecallResult | None:
        """Recall after the user's accepted jobs (waiting at most ``recall_wait``); None
        when memory is unavailable (strict: raises)."""
        try:
            engine = await self.engine()
            # In a run, the held input is the current turn: it is in the model input already,
            # and enqueueing it now would make this recall wait for its extraction.
            await self._send(release=not during_run)
            read = functools.partial(
                engine.recall_with_progress,
                self.user_id,
                request.query,
                max_tokens=request.max_tokens,
                include_history=request.include_history,
                as_of=request.as_of,
                explain=request.explain,
            )
            # The read also says which of the user's jobs are unfinished: in the steady
            # state none is, and the barrier costs nothing more.
            result, progress = await read(watch=self._watched)
            fresh = True
            if progress.unfinished:
                worker = self._started_worker(engine)
                fresh = await worker.wait_until_done(
                    self.user_id, set(progress.unfinished), self.recall_wait
                )
                result, progress = await read(watch=self._watched)  # memory changed meanwhile
            self._report(progress.watched)
        except (Mem01MemoryError, ConfigError):  # strict, or a bad argument: the caller's
            raise
        except Exception as exc:
            self.failed("recall", exc)
            return None
        if not fresh:
            result = dataclasses.replace(result, stale=True)
        self.last_recall = result
        return result

    async def flush(self, timeout: float | None) -> bool:
        """Wait for every accepted turn of the user (True) or ``timeout`` (False)."""
        engine = await self.engine_or_raise()
        try:
            await self._send(release=True)
            return await self._barrier(engine, timeout, report=True)
        except Mem01MemoryError:
            raise
        except Exception as exc:
            raise Mem01MemoryError(f"flush failed: {describe(exc)}") from None

    async def erase(self, timeout: float | None) -> EraseReceipt:
        """Apply accepted turns, then erase the user; later turns are remembered again."""
        engine = await self.engine_or_raise()
        self._outbox.discard()  # never enqueued, so erased with the rest
        await self._barrier(engine, timeout)
        receipt = await engine.erase_user(self.user_id)
        await engine.reinstate_user(self.user_id)
        self._watched.clear()
        return receipt

    async def close(self, flush_timeout: float) -> None:
        """Give accepted turns a bounded chance, then close the engine if it is ours.

        The engine is closed even when the flush fails (strict: the failure is raised
        after that)."""
        self._outbox.release()
        try:
            if self._outbox.unsent or (self._engine is not None and self._watched):
                try:
                    await self._send()
                    await self._barrier(await self.engine(), flush_timeout)
                except Exception as exc:
                    self.failed("flush", exc)
        finally:
            if self._outbox.unsent:
                lost = self._outbox.discard()
                self._outbox.dropped += lost
                log.warning(
                    "memory: %d turn(s) could not be enqueued before close and are lost", lost
                )
            if self._owns_engine and self._engine is not None:
                engine, self._engine = self._engine, None
                await stop_workers(engine)
                await engine.close()

    async def _barrier(
        self, engine: BeliefEngine, timeout: float | None, *, report: bool = False
    ) -> bool:
        """Wait for the user's jobs accepted before now (True: none left). With ``report``,
        surface this session's failed jobs (strict: raise)."""
        progress = await jobs.progress(engine.db, self.user_id, self._watched)
        done = True
        if progress.unfinished:
            worker = self._started_worker(engine)
            done = await worker.wait_until_done(self.user_id, set(progress.unfinished), timeout)
            if report:
                progress = await jobs.progress(engine.db, self.user_id, self._watched)
        if report:
            self._report(progress.watched)
        return done

    def _report(self, watched: dict[int, tuple[str, str | None]]) -> None:
        """Forget finished jobs; surface permanent failures (strict: raise)."""
        self._watched = [i for i in self._watched if i in watched and watched[i][0] != "done"]
        for job_id in self._watched:
            status, last_error = watched[job_id]
            if status == "failed" and job_id not in self._reported:
                self._reported.add(job_id)
                self.failed("extraction", RuntimeError(f"job {job_id}: {last_error}"))

    # -- the failure policy --------------------------------------------------------------

    def failed(self, kind: str, exc: BaseException) -> None:
        """Record a failure (strict: raise it as :class:`Mem01MemoryError`)."""
        message = f"{kind} failed: {describe(exc)}"
        self.last_error = message
        if self.strict:
            raise Mem01MemoryError(message) from None
        if kind not in self._warned:
            self._warned.add(kind)
            log.warning("memory %s; the conversation continues without it", message)


def describe(exc: BaseException) -> str:
    """A one-line, secret-free account of ``exc`` (the driver's error when wrapped)."""
    orig = getattr(exc, "orig", None)
    return redact(f"{type(orig or exc).__name__}: {orig or exc}".splitlines()[0])


__all__ = ["RecallRequest", "UserMemory"]
