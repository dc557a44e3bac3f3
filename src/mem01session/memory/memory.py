"""``Memory``: the application object that owns what every session shares, and the one
door to it.

One per application: the database, the belief engine, the extractor and the background
workers (:mod:`.runtime`). Sessions are cheap views onto it
(``Mem01Session(sid, user_id, memory=memory)``); everything else (an admin page, a
deletion request, the command line, the MCP server) uses its verbs (:mod:`.verbs`).
``async with memory:`` (or :meth:`Memory.aclose`) shuts down in order: sessions flush
what they hold, workers stop and release the jobs they claimed, the database closes.

Example::

    async with Memory() as memory:
        await memory.remember("alice", "Lives in Lisbon", key="home.city")
        print([b.content for b in await memory.beliefs("alice")])
"""

from __future__ import annotations

from typing import Any

from ..checks import check_flag, check_seconds
from ..config import Settings
from ..embeddings import Embedder, check_embedding_settings
from ..engine import BeliefEngine
from ..engine.engine_parts import Clock, utcnow
from ..extraction import Extractor
from ..queue import MemoryWorker, WorkerPolicy
from .erasing import ErasureVerbs
from .moving import PortableVerbs
from .owned_parts import check_parts
from .runtime import Parts, Runtime
from .verbs import MemoryVerbs


class Memory(MemoryVerbs, ErasureVerbs, PortableVerbs):
    """Opens (on first use, or with :meth:`open`) and owns the shared parts.

    With ``engine`` given, that engine is used and its database is the caller's to close;
    otherwise the database in ``settings`` (the embedded server when it names none) is
    opened with ``embedder`` (default: chosen from ``settings``) and closed by
    :meth:`aclose`. ``extractor`` defaults to the one ``settings`` chooses (OpenAI with a
    key, the offline rule extractor without). ``clock`` stamps the turns and reckons the
    recalls (default: the engine's when ``engine`` is given, which then keeps the only
    one; else UTC now).

    With ``run_worker=False`` this process records turns but extracts none: a worker of
    another process (``mem01session worker``, or a ``Memory`` there) applies them, woken
    at each turn; runs and flushes wait for it as for their own. Extraction then takes
    none of this process's CPU.

    If the interpreter exits normally with the memory still open, it is closed then:
    accepted turns get at most ``exit_timeout`` seconds to be extracted; those that
    cannot be are handed back to the job table (logged as a warning), where the next
    process that runs memory on the database takes them.
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
        clock: Clock | None = None,
        exit_timeout: float = 10.0,
        run_worker: bool = True,
    ) -> None:
        check_parts(settings, engine, embedder, extractor, worker_policy, clock)
        check_flag("run_worker", run_worker)
        check_flag("auto_migrate", auto_migrate, optional=True)
        settings = settings if settings is not None else Settings.from_env()
        if engine is None and embedder is None:  # a bad choice fails here, not in a run
            check_embedding_settings(settings)
        timeout = check_seconds("exit_timeout", exit_timeout)
        assert timeout is not None
        self._runtime = Runtime(
            Parts(
                settings=settings,
                engine=engine,
                embedder=embedder,
                extractor=extractor,
                worker_policy=worker_policy,
                auto_migrate=auto_migrate,
                clock=clock if clock is not None else engine.parts.clock if engine else utcnow,
                exit_timeout=timeout,
                run_worker=bool(run_worker),
            )
        )

    def __repr__(self) -> str:
        runtime = self._runtime
        state = "closed" if runtime.closed else ("open" if runtime.opened else "not yet opened")
        return f"Memory({state}, settings={runtime.settings!r})"

    @classmethod
    async def open(cls, settings: Settings | None = None, **options: Any) -> Memory:
        """A ``Memory`` whose database is open already, so that errors surface here
        (``options`` as for the constructor)."""
        memory = cls(settings, **options)
        try:
            await memory.engine()
        except BaseException:
            await memory.aclose()  # its loop's thread ends too
            raise
        return memory

    @property
    def settings(self) -> Settings:
        """The settings the memory was made with (``MEM01_*`` by default)."""
        return self._runtime.settings

    @property
    def run_worker(self) -> bool:
        """Whether this process extracts the turns it records (False: a worker elsewhere)."""
        return self._runtime.run_worker

    @property
    def closed(self) -> bool:
        return self._runtime.closed

    @property
    def extractor(self) -> Extractor:
        """The extractor the worker uses (chosen from the settings on first use)."""
        return self._runtime.extractor

    async def engine(self) -> BeliefEngine:
        """The belief engine, opened on first use: for what the verbs do not cover (usable
        from any event loop)."""
        return await self._runtime.engine()

    async def ready(self) -> None:
        """Make ready now what every run needs, instead of in the first run: the database
        open, this process's worker started, the embedding model and the tokenizer loaded
        (a second or two each, once per process), the connections runs use opened. A
        server calls it at start-up (then, say, ``gc.freeze()``)."""
        await self._runtime.ready()

    async def worker(self) -> MemoryWorker:
        """This process's extraction worker, started if it is not running (unless
        ``run_worker=False``); ``mem01session worker`` runs one and nothing else."""
        await self._runtime.ready()
        return await self._runtime.worker()

    async def aclose(self, *, flush_timeout: float = 5.0) -> None:
        """Flush the attached sessions (at most ``flush_timeout`` seconds), stop the workers
        (releasing their claimed jobs), and close the database if this memory opened it.

        Unfinished jobs stay durable and resume at the next start. Idempotent.
        """
        timeout = check_seconds("flush_timeout", flush_timeout)
        assert timeout is not None
        await self._runtime.close(timeout)

    async def __aenter__(self) -> Memory:
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.aclose()


def host_of(memory: Memory) -> Runtime:
    """What the session layer uses of ``memory`` (its ``SessionHost``): the engine, the
    workers, the sessions it flushes at close."""
    return memory._runtime


__all__ = ["Memory", "host_of"]
