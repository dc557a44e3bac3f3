"""What a :class:`~mem01session.memory.Memory` runs: its own loop, the engine it opens
there, the workers, and the sessions it flushes when it closes.

The memory does not live on the caller's event loop, which may be a new one per call
(``asyncio.run``), one that runs only during a call (``Runner.run_sync``) or a notebook's:
it opens the database and runs its workers on a loop of its own, on a daemon thread
(:class:`~mem01session.loops.LoopThread`), started when first needed. The database is
usable from any loop (:class:`~mem01session.db.Database`), so a session's per-run
statements run on the caller's loop, with no hand-over. A memory still open when the
interpreter exits normally is closed then, on its own loop: queued turns get at most
``exit_timeout`` seconds to be extracted, the rest are handed back to the job table.

:class:`Runtime` is what the session layer uses of a memory (its ``SessionHost``
protocol); applications use :class:`~mem01session.memory.Memory`, which owns one.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from ..checks import aware
from ..config import Settings
from ..db import Database
from ..embeddings import Embedder, default_embedder
from ..engine import BeliefEngine
from ..engine.engine_parts import Clock
from ..engine.episodes import EpisodePolicy
from ..errors import DatabaseError, MemoryClosedError
from ..extraction import Extractor, default_extractor
from ..logs import get_logger
from ..loops import LoopThread, register_exit_hook, unregister_exit_hook
from ..opening import Opening
from ..queue import JobStore, MemoryWorker, WorkerPolicy
from ..queue.policy import declared_timeout
from .attached import Attached, Attachments, left_at_exit, wait_left_behind
from .owned_parts import release_parts

log = get_logger(__name__)

# At exit, closing (workers stopped, claims handed back, database closed) may take this
# long beyond ``exit_timeout``; a memory still busy then is left to the lease.
EXIT_GRACE_SECONDS = 5.0

BACKGROUND_FLUSH_SECONDS = 5.0
""":meth:`Runtime.close_in_background`'s ``flush_timeout``."""


@dataclass(frozen=True)
class Parts:
    """What a ``Memory`` was given (checked by it): the parts left None are chosen from
    ``settings`` when first needed."""

    settings: Settings
    engine: BeliefEngine | None
    embedder: Embedder | None
    extractor: Extractor | None
    worker_policy: WorkerPolicy | None
    auto_migrate: bool | None
    clock: Clock
    exit_timeout: float
    run_worker: bool


def _log_close_failure(future: concurrent.futures.Future[tuple[int, list[int]]]) -> None:
    if not future.cancelled() and (exc := future.exception()) is not None:
        log.warning("memory: closing in the background failed: %s", exc)


class Runtime:
    """The engine, workers and attached sessions of one memory, on the memory's own loop."""

    def __init__(self, parts: Parts) -> None:
        self.settings = parts.settings
        self.exit_timeout = parts.exit_timeout
        self.run_worker = parts.run_worker
        """Whether this process extracts the turns it records (False: a worker elsewhere)."""
        self._engine = parts.engine
        self._embedder = parts.embedder
        self._extractor = parts.extractor
        self._policy = parts.worker_policy
        self._auto_migrate = parts.auto_migrate
        self._clock = parts.clock
        self._db: Database | None = None  # opened here, so closed here
        self._open_lock = asyncio.Lock()  # used on the memory's own loop only
        self._opening: Opening[BeliefEngine] = Opening()
        self._ready = False  # ready() has loaded what runs need
        self._home: LoopThread | None = None  # that loop, started when first needed
        self._home_lock = threading.Lock()
        self._workers: dict[int, MemoryWorker] = {}
        self._sessions = Attachments()  # flushed at close (.attached)
        self._made: list[object] = []  # parts chosen here, so closed here
        self._closed = False
        self._shutting_down = False  # _shutdown runs once
        self._closing: concurrent.futures.Future[tuple[int, list[int]]] | None = None

    @property
    def opened(self) -> bool:
        return self._engine is not None

    @property
    def closed(self) -> bool:
        return self._closed

    # -- the shared parts ----------------------------------------------------------------

    async def engine(self) -> BeliefEngine:
        """The belief engine, opened on first use (usable from any event loop). For
        :data:`~.opening.OPEN_RETRY_SECONDS` after an opening failed, raises that failure
        at once instead of trying again (:mod:`.opening`)."""
        if self._closed:
            raise MemoryClosedError("this Memory is closed; open a new one")
        engine = self._engine
        if engine is None:
            home = self._start_home()  # opened on the memory's own loop
            opening = self._opening.join(lambda: home.submit(self._open()))
            engine = await asyncio.shield(asyncio.wrap_future(opening))
        return engine

    def _named(self, exc: DatabaseError) -> DatabaseError:
        """``exc``, naming the setting the URL came from when the server could not be
        reached (what a user checks first)."""
        if self.settings.database_url and str(exc).startswith("could not connect to "):
            return DatabaseError(f"{exc} (set by {self.settings.database_url_variable})")
        return exc

    async def _open(self) -> BeliefEngine:
        async with self._open_lock:
            if self._closed:
                raise MemoryClosedError("this Memory is closed; open a new one")
            if self._engine is None:
                embedder = self._embedder
                if embedder is None:
                    embedder = default_embedder(self.settings)
                    self._made.append(embedder)
                try:
                    self._db = await Database.open(
                        self.settings.database_url,
                        home=self.settings.home,
                        auto_migrate=self._auto_migrate,
                        embedding_model=embedder.name,
                        embedding_dim=embedder.dim,
                    )
                except DatabaseError as exc:
                    raise self._named(exc) from None
                self._engine = BeliefEngine(
                    self._db,
                    embedder,
                    clock=self._clock,
                    episodes=EpisodePolicy(
                        self.settings.episodes, self.settings.episode_retention_days
                    ),
                )
            return self._engine

    async def ready(self) -> BeliefEngine:
        """:meth:`engine`, and what every run needs made ready with it: the worker started,
        the embedder's model loaded (the local one takes a second or two, once per
        process), the engine's token counter (the default BPE takes about as long, and
        is otherwise loaded by the first recall) and the connections the per-run path keeps
        idle (15), opened at once rather than one by one by the first burst of runs.
        Sessions call it before a run's budgeted memory work, so that what is paid once is
        not taken for a stalled database."""
        engine = await self.engine()
        await self.worker()
        if not self._ready:
            load = getattr(engine.embedder, "load", None)
            loading = asyncio.to_thread(load) if callable(load) else asyncio.sleep(0)
            await asyncio.gather(loading, engine.db.direct.fill())
            await asyncio.to_thread(lambda: engine.token_counter)
            self._ready = True
        return engine

    def now(self) -> datetime:
        """The memory's clock, time-zone aware."""
        return aware(self._clock())

    @property
    def extractor(self) -> Extractor:
        """The extractor sessions use (chosen from the settings on first use)."""
        if self._extractor is None:
            self._extractor = default_extractor(self.settings)
            self._made.append(self._extractor)
        return self._extractor

    async def jobs(self) -> JobStore:
        """The job table of this memory's database."""
        return JobStore((await self.engine()).db)

    async def worker(self) -> MemoryWorker:
        """The background worker for :attr:`extractor`, started on first use, on the
        memory's own loop (its methods may be called from any loop). With
        ``run_worker=False`` it is never started: its waits then follow the job table."""
        engine = await self.engine()
        extractor = self.extractor
        worker = self._workers.get(id(extractor))
        if worker is None:
            worker = self._workers.setdefault(
                id(extractor), MemoryWorker(engine, extractor, policy=self._worker_policy())
            )
        if not worker.running and self.run_worker:
            await self._start_home().call(_start(worker))
        return worker

    async def turns_queued(self, after: float = 0.0) -> None:
        """Turns were just queued: wake this process's worker (``after`` seconds from now).
        Without one, the enqueue itself notified the workers listening elsewhere
        (``JobStore.enqueue(notify=True)``)."""
        if self.run_worker:
            (await self.worker()).wake(after=after)

    def _worker_policy(self) -> WorkerPolicy:
        """The policy given, its extraction timeout (when it names none, and the extractor
        states none) ``MEM01_LLM_TIMEOUT``'s: one setting bounds an extraction."""
        policy = self._policy or WorkerPolicy()
        if policy.extract_timeout is None and declared_timeout(self.extractor) is None:
            policy = replace(policy, extract_timeout=self.settings.llm_timeout)
        return policy

    def _start_home(self) -> LoopThread:
        """The memory's own loop, started (and the exit hook registered) on first use."""
        with self._home_lock:
            if self._closed:
                raise MemoryClosedError("this Memory is closed; open a new one")
            if self._home is None:
                self._home = LoopThread("mem01-memory")
                register_exit_hook(self._close_at_exit)
            return self._home

    # -- the sessions --------------------------------------------------------------------

    def attach(self, session: Attached) -> None:
        """Flush ``session`` when this memory closes (at the latest, when the interpreter
        exits), if it is still in use then or :meth:`hold` keeps it."""
        self._sessions.attach(session)
        with contextlib.suppress(MemoryClosedError):  # closed: the session fails open
            self._start_home()  # so that the exit hook is in place

    def hold(self, session: Attached, holding: bool) -> None:
        """Keep an attached ``session`` alive while it is ``holding`` turns not yet enqueued
        (input waiting for its answer, turns the database could not take yet), so that
        closing the memory still sends them; otherwise it is freed once let go of."""
        self._sessions.hold(session, holding)

    def detach(self, session: Attached) -> None:
        self._sessions.detach(session)

    def sessions_of(self, user_id: str) -> list[Attached]:
        """The attached sessions of ``user_id``."""
        return self._sessions.of(user_id)

    def left_behind(self, user_id: str, job_ids: Sequence[int]) -> None:
        """A session was freed before its jobs ``job_ids`` were seen applied: closing the
        memory waits for them as for an open session's (the latest
        :data:`~.attached.LEFT_BEHIND_JOBS` of them; the rest are applied all the same,
        later)."""
        if self.run_worker and job_ids and not self._closed:
            self._sessions.left_behind(user_id, job_ids)

    def close_in_background(self) -> None:
        """Close on the memory's own loop without waiting for it (the session that owned it
        was freed unclosed): sessions and jobs get :meth:`close`'s chance, then its
        workers, database and thread end."""
        with self._home_lock:
            home = self._home
            if self._closed or self._closing is not None or home is None or not home.alive:
                return
            self._closing = home.submit(self._shutdown(BACKGROUND_FLUSH_SECONDS))
        self._closing.add_done_callback(_log_close_failure)

    # -- closing -------------------------------------------------------------------------

    async def close(self, flush_timeout: float) -> None:
        """Flush the attached sessions (at most ``flush_timeout`` seconds), stop the
        workers (releasing their claimed jobs), close the database if opened here."""
        if self._closing is not None:  # closing in the background already
            await asyncio.wrap_future(self._closing)
            return
        await self._shutdown(flush_timeout)

    async def _shutdown(self, flush_timeout: float) -> tuple[int, list[int]]:
        """:meth:`close`; how many accepted turns of the attached sessions are still not
        applied (their jobs are back in the queue), and the ids of the jobs the workers had
        claimed and handed back."""
        if self._closed or self._shutting_down:
            return 0, []
        self._shutting_down = True
        attached, left = self._sessions.take()
        results = await asyncio.gather(
            *(s.close(flush_timeout) for s in attached),
            self._wait_left_behind(left, flush_timeout),
            return_exceptions=True,
        )
        waiting = 0
        for result in results:
            if isinstance(result, BaseException):
                log.warning("memory: a session failed to flush at close: %s", result)
            else:
                waiting += result
        with self._home_lock:
            self._closed = True
            home = self._home
        unregister_exit_hook(self._close_at_exit)
        workers, self._workers = list(self._workers.values()), {}
        released: list[int] = []
        for worker in workers:
            released += await worker.stop()
        used: list[object | None] = [self._extractor, self._embedder]
        if (engine := self._engine) is not None:
            used += [engine.embedder, engine.db]
        await release_parts(home, self._made, used)
        if self._db is not None:
            db, self._db = self._db, None
            await db.close()
        if home is not None:
            home.stop()
            if not home.current:
                await asyncio.to_thread(home.join, EXIT_GRACE_SECONDS)
        return waiting, released

    async def _wait_left_behind(self, users: dict[str, set[int]], timeout: float) -> int:
        """Wait (at most ``timeout`` seconds) for the jobs of sessions let go of, by user;
        how many are still not applied."""
        if not users:
            return 0
        try:
            return await wait_left_behind(await self.worker(), users, timeout)
        except Exception as exc:  # they stay queued: the next start applies them
            log.warning("memory: could not wait for the turns of sessions let go of: %s", exc)
            return sum(len(ids) for ids in users.values())

    def _close_at_exit(self) -> None:
        """The interpreter exits with this memory open: close it on its own loop, waiting
        at most ``exit_timeout`` seconds for queued turns (plus a grace to stop)."""
        with self._home_lock:
            home, closing = self._home, self._closing
        if closing is not None:  # closing in the background already: let it finish
            with contextlib.suppress(Exception):
                closing.result(timeout=self.exit_timeout + EXIT_GRACE_SECONDS)
            if home is not None:
                home.join(EXIT_GRACE_SECONDS)
            return
        if self._closed or home is None or not home.alive:
            return
        future = home.submit(self._shutdown_at_exit())
        try:
            future.result(timeout=self.exit_timeout + EXIT_GRACE_SECONDS)
        except concurrent.futures.TimeoutError:
            future.cancel()
            log.warning(
                "memory: could not shut down within %.0f s at exit; the jobs it had claimed "
                "are taken back by the next process of this machine that runs memory on the "
                "database (elsewhere, when their lease ends)",
                self.exit_timeout + EXIT_GRACE_SECONDS,
            )
        except Exception as exc:
            log.warning("memory: shutting down at exit failed: %s", exc)
        home.join(EXIT_GRACE_SECONDS)

    async def _shutdown_at_exit(self) -> None:
        db = self._engine.db if self._engine is not None else None
        if db is not None and db.closed:
            # The application closed the database and not the memory: nothing can be
            # flushed or handed back any more; the workers ended with the database.
            with self._home_lock:
                self._closed = True
            self._sessions.take()
            self._workers.clear()
            if self._home is not None:
                self._home.stop()
            return
        waiting, released = await self._shutdown(self.exit_timeout)
        # One warning, naming what is left: the process ends without Memory.aclose().
        if (warning := left_at_exit(waiting, released, self.exit_timeout)) is not None:
            log.warning("%s", warning)


async def _start(worker: MemoryWorker) -> None:
    worker.start()


__all__ = ["BACKGROUND_FLUSH_SECONDS", "EXIT_GRACE_SECONDS", "Parts", "Runtime"]
