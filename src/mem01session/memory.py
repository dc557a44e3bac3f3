"""``Memory``: the application object that owns what every session shares.

One per application: the database, the belief engine, the extractor and the background
workers. Sessions are cheap views onto it (``Mem01Session(sid, user_id, memory=memory)``).
``async with memory:`` (or :meth:`Memory.aclose`) shuts down in order: sessions flush
what they hold, workers stop and release the jobs they claimed, the database closes.
"""

from __future__ import annotations

import asyncio
import contextlib
from datetime import datetime
from typing import Any, Protocol

from .checks import aware
from .config import Settings
from .db import Database
from .embeddings import Embedder, default_embedder
from .engine import BeliefEngine
from .engine.episodes import EpisodePolicy
from .engine.parts import Clock, utcnow
from .errors import MemoryClosedError
from .extraction import Extractor, default_extractor
from .logs import get_logger
from .queue import JobStore, MemoryWorker, WorkerPolicy

log = get_logger(__name__)


class Attached(Protocol):
    """What a session gives its ``Memory`` so that closing the memory flushes it."""

    async def close(self, flush_timeout: float) -> None: ...


class Memory:
    """Opens (on first use, or with :meth:`open`) and owns the shared parts.

    With ``engine`` given, that engine is used and its database is the caller's to close;
    otherwise the database in ``settings`` (the embedded server when it names none) is
    opened with ``embedder`` (default: chosen from ``settings``) and closed by
    :meth:`aclose`. ``extractor`` defaults to the one ``settings`` chooses (OpenAI with a
    key, the offline rule extractor without).
    """

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        engine: BeliefEngine | None = None,
        embedder: Embedder | None = None,
        extractor: Extractor | None = None,
        worker_policy: WorkerPolicy | None = None,
        auto_migrate: bool | None = None,
        clock: Clock = utcnow,
    ) -> None:
        self.settings = settings if settings is not None else Settings.from_env()
        self._engine = engine
        self._embedder = embedder
        self._extractor = extractor
        self._policy = worker_policy
        self._auto_migrate = auto_migrate
        self._clock = clock
        self._db: Database | None = None  # opened here, so closed here
        self._open_lock = asyncio.Lock()
        self._workers: dict[int, MemoryWorker] = {}
        self._attached: list[Attached] = []
        self._made: list[object] = []  # parts chosen here, so closed here
        self._closed = False

    def __repr__(self) -> str:
        state = "closed" if self._closed else ("open" if self._engine else "not yet opened")
        return f"Memory({state}, settings={self.settings!r})"

    @classmethod
    async def open(cls, settings: Settings | None = None, **options: Any) -> Memory:
        """A ``Memory`` whose database is open already, so that errors surface here
        (``options`` as for the constructor)."""
        memory = cls(settings, **options)
        await memory.engine()
        return memory

    # -- the shared parts ----------------------------------------------------------------

    async def engine(self) -> BeliefEngine:
        """The belief engine, opened on first use."""
        if self._closed:
            raise MemoryClosedError("this Memory is closed; open a new one")
        if self._engine is None:
            async with self._open_lock:
                if self._engine is None:
                    embedder = self._embedder
                    if embedder is None:
                        embedder = default_embedder(self.settings)
                        self._made.append(embedder)
                    self._db = await Database.open(
                        self.settings.database_url,
                        home=self.settings.home,
                        auto_migrate=self._auto_migrate,
                        embedding_model=embedder.name,
                        embedding_dim=embedder.dim,
                    )
                    self._engine = BeliefEngine(
                        self._db,
                        embedder,
                        clock=self._clock,
                        episodes=EpisodePolicy(
                            self.settings.episodes, self.settings.episode_retention_days
                        ),
                    )
        return self._engine

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
        """The background worker for :attr:`extractor`, started on first use."""
        engine = await self.engine()
        extractor = self.extractor
        worker = self._workers.get(id(extractor))
        if worker is None:
            worker = self._workers[id(extractor)] = MemoryWorker(
                engine, extractor, policy=self._policy
            )
        worker.start()
        return worker

    # -- lifecycle -----------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        return self._closed

    def attach(self, session: Attached) -> None:
        """Flush ``session`` when this memory closes."""
        if session not in self._attached:
            self._attached.append(session)

    def detach(self, session: Attached) -> None:
        if session in self._attached:
            self._attached.remove(session)

    async def aclose(self, *, flush_timeout: float = 5.0) -> None:
        """Flush the attached sessions (at most ``flush_timeout`` seconds), stop the workers
        (releasing their claimed jobs), and close the database if this memory opened it.

        Unfinished jobs stay durable and resume at the next start. Idempotent.
        """
        if self._closed:
            return
        attached, self._attached = list(self._attached), []
        results = await asyncio.gather(
            *(s.close(flush_timeout) for s in attached), return_exceptions=True
        )
        for result in results:
            if isinstance(result, Exception):
                log.warning("memory: a session failed to flush at close: %s", result)
        self._closed = True
        workers, self._workers = list(self._workers.values()), {}
        for worker in workers:
            await worker.stop()
        for part in self._made:  # the extractor and embedder chosen here: their HTTP clients
            close = getattr(part, "aclose", None)
            if close is not None:
                with contextlib.suppress(Exception):
                    await close()
        if self._db is not None:
            db, self._db = self._db, None
            await db.close()

    async def __aenter__(self) -> Memory:
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.aclose()


__all__ = ["Memory"]
