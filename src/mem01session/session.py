"""``Mem01Session``: the Agents SDK session with a durable, user-scoped memory tier."""

from __future__ import annotations

import asyncio
import dataclasses
import functools
from datetime import UTC, datetime
from pathlib import Path

from agents import RunConfig
from agents.items import TResponseInputItem
from agents.memory import Session, SessionSettings, SQLiteSession

from . import jobs
from .config import Settings
from .engine import BeliefEngine
from .engine.users import is_utf8
from .errors import ConfigError, Mem01MemoryError
from .extraction import Extractor
from .extraction.base import TurnMessage
from .injection import RecallPrefetch, memory_run_config
from .outbox import TurnOutbox
from .records import ApplyResult, Belief, EraseReceipt, RecallResult
from .redaction import get_logger, redact
from .turns import turn_messages
from .worker import MemoryWorker, shared_worker, stop_workers

log = get_logger(__name__)

MAX_ID_CHARS = 200
ANSWER_GRACE_SECONDS = 0.05


def _check_id(name: str, value: object) -> str:
    if not isinstance(value, str):
        raise ConfigError(f"{name} must be a string, got {type(value).__name__}")
    if not value.strip():
        raise ConfigError(f"{name} must not be empty")
    if "\x00" in value or len(value) > MAX_ID_CHARS or not is_utf8(value):
        raise ConfigError(
            f"{name} must be valid UTF-8, at most {MAX_ID_CHARS} characters, without NUL bytes"
        )
    return value


class Mem01Session:
    """An SDK ``Session`` whose transcript lives in ``inner`` and whose memory lives in PostgreSQL.

    ``get_items``/``add_items``/``pop_item``/``clear_session`` act on the transcript of
    ``session_id`` (an SDK ``SQLiteSession`` under ``MEM01_HOME`` unless ``inner`` is
    given). ``add_items`` also records the turn for extraction; a background worker turns
    it into beliefs about ``user_id`` after the answer. Pass ``run_config=session.run_config()``
    to ``Runner.run`` so the model sees what is remembered.

    Memory failures never break the conversation (``last_memory_error`` says what went
    wrong) unless ``strict=True``, which raises :class:`Mem01MemoryError` instead. While
    the database is unreachable, turns are kept in memory (at most
    :data:`MAX_UNSENT_TURNS`, see ``unsent_turns``) and enqueued, in order, by the next
    ``add_items``, ``recall``, ``flush_memory`` or ``aclose`` that reaches it; with
    ``strict=True`` the failing ``add_items`` raises and keeps nothing.
    """

    def __init__(
        self,
        session_id: str,
        user_id: str,
        *,
        inner: Session | None = None,
        engine: BeliefEngine | None = None,
        extractor: Extractor | None = None,
        max_memory_tokens: int = 800,
        strict: bool = False,
        recall_wait: float = 2.0,
        settings: Settings | None = None,
    ) -> None:
        self.session_id = _check_id("session_id", session_id)
        self.user_id = _check_id("user_id", user_id)
        if not isinstance(max_memory_tokens, int) or max_memory_tokens < 1:
            raise ConfigError(
                f"max_memory_tokens must be a positive int, got {max_memory_tokens!r}"
            )
        if recall_wait < 0:
            raise ConfigError(f"recall_wait must be >= 0 seconds, got {recall_wait!r}")
        self._settings = settings
        self.max_memory_tokens = max_memory_tokens
        self.strict = strict
        self.recall_wait = recall_wait
        self._owns_inner = inner is None
        self._inner: Session = inner if inner is not None else self._default_inner()
        self._engine = engine
        self._owns_engine = engine is None
        self._engine_lock = asyncio.Lock()
        self._extractor = extractor
        self._worker: MemoryWorker | None = None
        self._my_jobs: list[int] = []
        self._outbox = TurnOutbox(self.user_id, self.session_id)
        self._reported_failures: set[int] = set()
        self._warned: set[str] = set()
        self.last_memory_error: str | None = None
        self.last_recall: RecallResult | None = None
        self._history_reads = 0
        self._injecting = False
        self._prefetch_run = RecallPrefetch()

    def __repr__(self) -> str:
        return (
            f"Mem01Session(session_id={self.session_id!r}, user_id={self.user_id!r}, "
            f"strict={self.strict})"
        )

    @property
    def session_settings(self) -> SessionSettings | None:
        """The transcript store's settings (e.g. the history ``limit``)."""
        return getattr(self._inner, "session_settings", None)

    @session_settings.setter
    def session_settings(self, value: SessionSettings | None) -> None:
        self._inner.session_settings = value

    @property
    def inner(self) -> Session:
        """The transcript store."""
        return self._inner

    def _default_inner(self) -> Session:
        home = (self._settings or Settings.from_env()).home
        Path(home).mkdir(parents=True, exist_ok=True)
        return SQLiteSession(self.session_id, Path(home) / "transcripts.sqlite")

    # -- the SDK Session protocol: transcript -----------------------------------------

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        self._history_reads += 1  # the SDK reads the history once at the start of a run
        return await self._inner.get_items(limit)

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Write the transcript first, then record the turn's text for extraction.

        A run's input is held until its answer is stored, then the whole turn becomes one
        durable job. If the database cannot take it, the turn waits in memory and is
        enqueued later (see the class docstring); ``strict=True`` raises instead.
        """
        messages = turn_messages(items)
        self._prefetch(messages)
        try:
            await self._inner.add_items(items)
        except BaseException:
            self._prefetch_run.drop()
            raise
        if not messages:
            return
        now = self._engine.clock() if self._engine is not None else datetime.now(UTC)
        if not self._outbox.add(messages, now):
            return  # input held until its answer arrives
        try:
            await self._send_unsent()
        except Exception as exc:
            self._memory_failed("enqueue", exc)

    @property
    def unsent_turns(self) -> int:
        """Completed turns not yet enqueued (the database was unreachable)."""
        return self._outbox.unsent

    @property
    def dropped_turns(self) -> int:
        """Turns given up on: beyond the in-memory limit during an outage, or unsent at close."""
        return self._outbox.dropped

    async def pop_item(self) -> TResponseInputItem | None:
        """Remove the newest transcript item (durable memory is untouched)."""
        return await self._inner.pop_item()

    async def clear_session(self) -> None:
        """Clear this conversation's transcript (durable memory is untouched)."""
        await self._inner.clear_session()

    # -- injection ---------------------------------------------------------------------

    def run_config(self, base: RunConfig | None = None) -> RunConfig:
        """A fresh ``RunConfig`` (``base`` kept) that injects this user's memory."""
        self._injecting = True
        return memory_run_config(self._block_for, base, lambda: self._history_reads)

    def _prefetch(self, messages: list[TurnMessage]) -> None:
        """Start this run's recall as soon as its input is stored (see RecallPrefetch)."""
        query = next((m.text for m in reversed(messages) if m.role == "user"), "")
        answered = any(m.role == "assistant" for m in messages)
        if self._injecting and query and not answered:
            self._prefetch_run.start((self._history_reads, query), lambda: self._block(query))
        else:
            self._prefetch_run.drop()

    async def _block_for(self, query: str) -> str | None:
        started = self._prefetch_run.take((self._history_reads, query))
        return await (started if started is not None else self._block(query))

    async def _block(self, query: str) -> str | None:
        result = await self._recall(query, during_run=True)  # fail-open inside, strict raises
        return (result.text or None) if result is not None else None

    # -- management --------------------------------------------------------------------

    async def recall(
        self,
        query: str,
        *,
        max_tokens: int | None = None,
        include_history: bool = False,
        as_of: datetime | None = None,
        explain: bool = False,
    ) -> RecallResult | None:
        """What the model would be shown for ``query`` (None if memory is unavailable).

        Waits (at most ``recall_wait`` seconds) for the user's turns accepted so far.
        """
        return await self._recall(
            query,
            max_tokens=max_tokens,
            include_history=include_history,
            as_of=as_of,
            explain=explain,
            during_run=False,
        )

    async def _recall(
        self,
        query: str,
        *,
        max_tokens: int | None = None,
        include_history: bool = False,
        as_of: datetime | None = None,
        explain: bool = False,
        during_run: bool,
    ) -> RecallResult | None:
        try:
            engine = await self._engine_or_open()
            # In a run, the held input is the current turn: it is in the model input already,
            # and enqueueing it now would make this recall wait for its extraction.
            await self._send_unsent(release=not during_run)

            read = functools.partial(
                engine.recall_with_progress,
                self.user_id,
                query,
                max_tokens=max_tokens or self.max_memory_tokens,
                include_history=include_history,
                as_of=as_of,
                explain=explain,
            )
            # The read also says which of the user's jobs are unfinished: in the steady
            # state none is, and the barrier costs nothing more.
            result, progress = await read(watch=self._my_jobs)
            fresh = True
            if progress.unfinished:
                worker = self._ensure_worker(engine)
                fresh = await worker.wait_until_done(
                    self.user_id, set(progress.unfinished), self.recall_wait
                )
                result, progress = await read(watch=self._my_jobs)  # memory changed meanwhile
            self._report_failed_jobs(progress.watched)
        except Mem01MemoryError:
            raise
        except Exception as exc:
            self._memory_failed("recall", exc)
            return None
        if not fresh:
            result = dataclasses.replace(result, stale=True)
        self.last_recall = result
        return result

    async def flush_memory(self, timeout: float | None = 30.0) -> bool:
        """Wait until every turn accepted for this user so far is applied (True) or the
        timeout passes (False)."""
        engine = await self._engine_strict()
        try:
            await self._send_unsent(release=True)
            done = await self._barrier(engine, timeout, report=True)
        except Mem01MemoryError:
            raise
        except Exception as exc:
            raise Mem01MemoryError(f"flush failed: {_describe(exc)}") from None
        return done

    async def memory_history(
        self, *, include_inactive: bool = True, limit: int = 100
    ) -> list[Belief]:
        """The user's beliefs, oldest first, including superseded ones by default."""
        engine = await self._engine_strict()
        return await engine.history(self.user_id, include_inactive=include_inactive, limit=limit)

    async def correct_memory(self, belief_id: int, content: str) -> ApplyResult:
        """Replace what a belief says; the old statement stays in history."""
        engine = await self._engine_strict()
        return await engine.correct(self.user_id, belief_id, content)

    async def forget_memory(
        self, belief_id: int, *, reason: str = "forgotten on request"
    ) -> ApplyResult:
        """Mark a belief as no longer true; it leaves recall, its text stays in history."""
        engine = await self._engine_strict()
        return await engine.forget(self.user_id, belief_id, reason)

    async def clear_memory(self, timeout: float | None = 30.0) -> EraseReceipt:
        """Erase the user's durable memory (beliefs, ledger, provenance, jobs); the
        transcript is untouched. Accepted turns are applied first, so none of them can
        come back afterwards; new turns after this call are remembered again."""
        engine = await self._engine_strict()
        self._outbox.discard()  # never enqueued, so erased with the rest
        await self._barrier(engine, timeout)
        receipt = await engine.erase_user(self.user_id)
        await engine.reinstate_user(self.user_id)
        self._my_jobs.clear()
        return receipt

    # -- lifecycle ---------------------------------------------------------------------

    async def aclose(self, *, flush_timeout: float = 5.0) -> None:
        """Give pending extraction a bounded chance to finish, then close what this session
        created (the default transcript store, the engine). Unfinished jobs stay durable
        and resume at the next start."""
        self._outbox.release()
        if self._outbox.unsent or (self._engine is not None and self._my_jobs):
            try:
                await self._send_unsent()
                await self._barrier(await self._engine_or_open(), flush_timeout)
            except Exception as exc:
                self._memory_failed("flush", exc)
        if self._outbox.unsent:
            lost = self._outbox.discard()
            self._outbox.dropped += lost
            log.warning("memory: %d turn(s) could not be enqueued before close and are lost", lost)
        if self._owns_engine and self._engine is not None:
            await stop_workers(self._engine)
            await self._engine.close()
            self._engine = None
        if self._owns_inner:
            close = getattr(self._inner, "close", None)
            if callable(close):
                close()

    async def __aenter__(self) -> Mem01Session:
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.aclose()

    # -- internals ---------------------------------------------------------------------

    async def _engine_or_open(self) -> BeliefEngine:
        if self._engine is None:
            async with self._engine_lock:
                if self._engine is None:
                    self._engine = await BeliefEngine.open(self._settings)
        return self._engine

    async def _engine_strict(self) -> BeliefEngine:
        try:
            return await self._engine_or_open()
        except Exception as exc:
            raise Mem01MemoryError(f"memory is unavailable: {_describe(exc)}") from None

    async def _send_unsent(self, *, release: bool = False) -> None:
        """Enqueue completed turns (and, with ``release``, held input too), oldest first."""
        if release:
            self._outbox.release()
        if not self._outbox.unsent:
            return
        try:
            engine = await self._engine_or_open()
            sent = await self._outbox.send(engine.db)
        except Exception:
            if self.strict:  # the caller hears of the failure: nothing is kept behind its back
                self._outbox.discard()
            raise
        self._my_jobs += sent
        # A short grace lets the run that stored the answer return before extraction
        # competes with it for this event loop; barriers still wake the worker at once.
        self._ensure_worker(engine).wake(after=ANSWER_GRACE_SECONDS)

    @property
    def extractor(self) -> Extractor:
        """The extractor turning this session's turns into beliefs (chosen on first use:
        OpenAI when ``OPENAI_API_KEY`` is set, the offline rule extractor otherwise)."""
        if self._extractor is None:
            from .extraction import default_extractor

            self._extractor = default_extractor(self._settings)
        return self._extractor

    def _ensure_worker(self, engine: BeliefEngine) -> MemoryWorker:
        if self._worker is None:
            self._worker = shared_worker(engine, self.extractor)
        self._worker.start()
        return self._worker

    async def _barrier(
        self, engine: BeliefEngine, timeout: float | None, *, report: bool = False
    ) -> bool:
        """Wait for the user's jobs accepted before now (True: none left). With ``report``,
        surface this session's failed jobs (strict: raise)."""
        progress = await jobs.progress(engine.db, self.user_id, self._my_jobs)
        done = True
        if progress.unfinished:
            worker = self._ensure_worker(engine)
            done = await worker.wait_until_done(self.user_id, set(progress.unfinished), timeout)
            if report:
                progress = await jobs.progress(engine.db, self.user_id, self._my_jobs)
        if report:
            self._report_failed_jobs(progress.watched)
        return done

    def _report_failed_jobs(self, mine: dict[int, tuple[str, str | None]]) -> None:
        """Forget finished jobs; surface permanent failures (strict: raise)."""
        self._my_jobs = [i for i in self._my_jobs if i in mine and mine[i][0] != "done"]
        for job_id in self._my_jobs:
            status, last_error = mine[job_id]
            if status == "failed" and job_id not in self._reported_failures:
                self._reported_failures.add(job_id)
                self._memory_failed("extraction", RuntimeError(f"job {job_id}: {last_error}"))

    def _memory_failed(self, kind: str, exc: BaseException) -> None:
        message = f"{kind} failed: {_describe(exc)}"
        self.last_memory_error = message
        if self.strict:
            raise Mem01MemoryError(message) from None
        if kind not in self._warned:
            self._warned.add(kind)
            log.warning("memory %s; the conversation continues without it", message)


def _describe(exc: BaseException) -> str:
    orig = getattr(exc, "orig", None)
    return redact(f"{type(orig or exc).__name__}: {orig or exc}".splitlines()[0])


__all__ = ["Mem01Session"]
