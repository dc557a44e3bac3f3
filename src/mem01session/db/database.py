"""The async database handle: SQLAlchemy engines (one per event loop) and a direct pool,
on psycopg 3."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pgvector.psycopg import register_vector_async
from psycopg.errors import QueryCanceled
from sqlalchemy import event, text
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from ..config import default_home
from ..errors import DatabaseError, MigrationRequiredError
from ..logs import describe, get_logger
from ..loops import CLOSE_ELSEWHERE_SECONDS, elsewhere, run_on
from ..secrets.redaction import redact_dsn
from . import migrate, versions
from .direct import DirectPool
from .embedded import embedded_url, let_go, restart_if_stopped
from .urls import libpq_url, sqlalchemy_url, with_connect_timeout
from .vector_index import VALID_SQL, VectorIndex, ensure_vector_index, vector_index

log = get_logger(__name__)

# Reading the schema's revision at opening waits at most this long (see read_schema_info).
SCHEMA_READ_TIMEOUT_SECONDS = 10.0


@dataclass(frozen=True)
class SchemaInfo:
    """What the database was built for."""

    revision: str | None
    embedding_model: str | None
    embedding_dim: int


LET_GO_SECONDS = 5.0
"""How long a close waits for the embedded server to be let go of (stopped, when this was
its last user): a server that stopped answering must not hold the close."""


async def _let_go_within(home: Path, seconds: float) -> None:
    """:func:`~.embedded.let_go` on a thread of its own, waited for at most ``seconds``
    (past them it goes on alone, and ends with the process at the latest)."""
    done = threading.Event()

    def run() -> None:
        try:
            let_go(home)
        except Exception as exc:  # the close goes on; the server stops at the next exit
            log.warning("database: could not let go of the embedded server: %s", describe(exc))
        finally:
            done.set()

    threading.Thread(target=run, name="mem01-let-go", daemon=True).start()
    if not await asyncio.to_thread(done.wait, seconds):
        log.warning("database: the embedded server did not stop within %g s", seconds)


class Database:
    """Two pools on one PostgreSQL database, usable from any event loop.

    ``sa_engine`` (SQLAlchemy, async) serves everything off the per-run path but the write
    transactions; ``direct`` (:class:`DirectPool`) the single statements every run makes
    (the recall, the enqueue) and the write transactions (:func:`~..engine.tx.transaction`),
    without SQLAlchemy's per-statement overhead. Open it with
    :meth:`open`; close it with :meth:`close` (or ``async with``).

    A SQLAlchemy engine belongs to the event loop it runs on, so ``sa_engine`` is the
    running loop's own, made there on first use: the caller's loop (one per
    ``asyncio.run``, or the loop ``Runner.run_sync`` keeps) and the memory's own loop each
    have theirs. The engine of a loop that was closed is disposed of when a new loop first
    asks for one, and every engine when the database closes. ``direct`` is one pool for
    all loops (see :mod:`.direct`).
    """

    def __init__(
        self,
        url: str,
        *,
        embedded: bool,
        pool_size: int = 5,
        home: Path | None = None,
    ) -> None:
        self.direct = DirectPool(
            url, max_open=pool_size * 3, max_idle=pool_size * 3, on_connect_error=self.revive
        )
        self._url = url
        self._pool_size = pool_size
        self.embedded = embedded
        self._home = home if embedded else None
        # The restart of a stopped embedded server in progress (one at a time, on a thread
        # of its own: never in a pool that runs other work): True when it restarted it.
        self._reviving: concurrent.futures.Future[bool] | None = None
        self._engines: dict[asyncio.AbstractEventLoop, AsyncEngine] = {}
        self._retired: list[AsyncEngine] = []  # engines of closed loops, to dispose of
        self._disposing: set[asyncio.Task[None]] = set()
        self._guard = threading.Lock()
        self._closed = False
        self._vector_indexes: dict[tuple[str, int], VectorIndex | None] = {}

    def __repr__(self) -> str:
        return f"Database(url={redact_dsn(self._url)!r}, embedded={self.embedded})"

    @property
    def url(self) -> str:
        """The libpq URL (contains the password, if any: never log it)."""
        return self._url

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def sa_engine(self) -> AsyncEngine:
        """The SQLAlchemy engine of the running event loop (made on its first use there)."""
        loop = asyncio.get_running_loop()
        engine = self._engines.get(loop)
        return engine if engine is not None else self._engine_for(loop)

    def _engine_for(self, loop: asyncio.AbstractEventLoop) -> AsyncEngine:
        with self._guard:
            if self._closed:
                raise DatabaseError(f"{self!r} is closed")
            engine = self._engines.get(loop)
            if engine is not None:
                return engine
            for old in [other for other in self._engines if other.is_closed()]:
                self._retired.append(self._engines.pop(old))
            engine = self._engines[loop] = _make_engine(self._url, self._pool_size)
            retire = bool(self._retired)
        if retire:
            task = loop.create_task(self._dispose_retired())
            self._disposing.add(task)
            task.add_done_callback(self._disposing.discard)
        return engine

    async def _dispose_retired(self) -> None:
        """Close the pooled connections of engines whose loop is closed (closing a
        connection waits on no loop, so any loop can do it)."""
        while True:
            with self._guard:
                if not self._retired:
                    return
                engine = self._retired.pop()
            await engine.dispose()

    @classmethod
    async def open(
        cls,
        url: str | None = None,
        *,
        home: Path | None = None,
        auto_migrate: bool | None = None,
        embedding_model: str | None = None,
        embedding_dim: int | None = None,
        pool_size: int = 5,
    ) -> Database:
        """Connect, make sure the schema is current, and check the embedding contract.

        With no ``url`` the embedded server under ``home`` (default: the platform's data
        folder, see :func:`~mem01session.config.default_home`) is started and migrated
        automatically. An external
        database at an older revision raises :class:`MigrationRequiredError` unless
        ``auto_migrate=True``. ``embedding_model``/``embedding_dim`` are recorded by a
        database created here.
        """
        embedded = url is None
        home = home or default_home()
        if url is None:
            url = await asyncio.to_thread(embedded_url, home)
            if auto_migrate is None:
                auto_migrate = True
        else:
            # SQLAlchemy's form (postgresql+psycopg://) is read as libpq's: the direct pool
            # hands the URL to libpq, which takes no driver in the scheme.
            url = with_connect_timeout(libpq_url(url))
        await asyncio.to_thread(
            prepare_schema,
            url,
            auto_migrate=bool(auto_migrate),
            embedding_model=embedding_model,
            embedding_dim=embedding_dim,
        )
        db = cls(url, embedded=embedded, pool_size=pool_size, home=home)
        failure: str | None = None
        try:
            async with db.sa_engine.connect() as conn:
                await conn.execute(text("SELECT 1"))
        except (SQLAlchemyError, OSError) as exc:
            failure = describe(exc)
        if failure is not None:
            # Raised out here, not in the except block: the driver's exception (whose text
            # may hold part of a malformed password) must not ride along as the context.
            await db.close()
            raise DatabaseError(f"could not connect to {db!r}: {failure}")
        return db

    async def vector_index(self, model: str, dim: int) -> VectorIndex | None:
        """The usable HNSW index over ``model``'s episode vectors, or None (recall then
        scans a user's episodes exactly); looked up once per process (see
        :mod:`.vector_index`)."""
        key = (model, dim)
        if key not in self._vector_indexes:
            index = vector_index(model, dim)
            if index is not None:
                rows = await self.direct.fetch(VALID_SQL, {"name": index.name})
                if not rows or not rows[0]["valid"]:
                    index = None
            self._vector_indexes[key] = index
        return self._vector_indexes[key]

    async def revive(self) -> bool:
        """After a failed connection: start the embedded server again if it stopped while
        this process used it (True when restarted). A no-op for an external database.

        One restart at a time, whichever loops noticed the stop, on a thread of its own
        (a restart can take seconds: it must not occupy a pool other work waits for).
        Cancelling the caller leaves the restart running; :attr:`restarting` says so.
        """
        home = self._home
        if home is None:
            return False
        with self._guard:
            restart = self._reviving
            if restart is None or restart.done():
                restart = self._reviving = concurrent.futures.Future()
                threading.Thread(
                    target=_restart, args=(home, restart), name="mem01-revive", daemon=True
                ).start()
        # Shielded: the caller may give up (its budget ran out), the restart goes on.
        return await asyncio.shield(asyncio.wrap_future(restart))

    @property
    def restarting(self) -> bool:
        """Whether the embedded server is being restarted right now (see :meth:`revive`)."""
        restart = self._reviving
        return restart is not None and not restart.done()

    async def forget_loop(self) -> None:
        """Dispose of the running loop's SQLAlchemy engine (that loop is about to end); a
        later use on it makes a new one."""
        with self._guard:
            engine = self._engines.pop(asyncio.get_running_loop(), None)
        if engine is not None:
            await engine.dispose()

    async def close(self) -> None:
        """Close both pools: every loop's engine (one whose loop runs on another thread is
        disposed of there) and the direct pool's idle connections."""
        with self._guard:
            let_go_of = self._home if not self._closed else None
            self._closed = True
            engines, self._engines = self._engines, {}
            retired, self._retired = self._retired, []
        await self.direct.close()
        for loop, engine in engines.items():
            other = elsewhere(loop)
            if other is None:
                await engine.dispose()
                continue
            try:
                async with asyncio.timeout(CLOSE_ELSEWHERE_SECONDS):
                    await run_on(other, engine.dispose())
            except Exception as exc:  # that loop is stuck: its connections die with it
                log.warning("database: could not close the pool of another loop: %s", exc)
        for engine in retired:
            await engine.dispose()
        if let_go_of is not None:  # the embedded server's: the last user stops it
            await _let_go_within(let_go_of, LET_GO_SECONDS)

    async def __aenter__(self) -> Database:
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.close()


def _restart(home: Path, into: concurrent.futures.Future[bool]) -> None:
    """:func:`restart_if_stopped` on this thread, its outcome into ``into``."""
    try:
        restarted = restart_if_stopped(home)
    except BaseException as exc:
        into.set_exception(exc)
    else:
        into.set_result(restarted)


def _make_engine(url: str, pool_size: int) -> AsyncEngine:
    engine = create_async_engine(
        sqlalchemy_url(url),
        pool_size=pool_size,
        max_overflow=pool_size * 2,
        # A ping per checkout: every event loop has a pool of its own, and each finds out
        # about a server restart by itself instead of failing a statement first. The
        # per-run statements go through the direct pool and pay no such round trip.
        pool_pre_ping=True,
        pool_recycle=1800,
    )

    @event.listens_for(engine.sync_engine, "connect")
    def _register_vector(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.run_async(register_vector_async)

    return engine


def read_schema_info(url: str) -> SchemaInfo:
    """Revision and embedding contract of the database at ``url``. A read that waits
    longer than :data:`SCHEMA_READ_TIMEOUT_SECONDS` (on a lock held elsewhere, as by a
    migration running in another process, or on a server that stopped answering) fails
    with that said, rather than hold whoever is opening the database."""
    from sqlalchemy import create_engine

    engine = create_engine(sqlalchemy_url(url))
    failure: str | None = None
    doing = "connect to"
    try:
        with engine.connect() as conn:
            ms = int(SCHEMA_READ_TIMEOUT_SECONDS * 1000)
            conn.execute(text(f"SET LOCAL statement_timeout = {ms}"))
            revision = versions.current_of(conn)
            row = None
            if revision is not None:
                row = conn.execute(
                    text("SELECT embedding_model, embedding_dim FROM memory_meta WHERE id = 1")
                ).first()
    except SQLAlchemyError as exc:
        if isinstance(getattr(exc, "orig", None), QueryCanceled):
            doing = "open"
            failure = (
                f"its schema could not be read within {SCHEMA_READ_TIMEOUT_SECONDS:g} s "
                "(a migration running elsewhere may hold a lock on it)"
            )
        else:
            failure = describe(exc)
    finally:
        engine.dispose()
    if failure is not None:  # raised outside the except block: no driver error as context
        raise DatabaseError(f"could not {doing} {redact_dsn(url)!r}: {failure}")
    if row is None:
        return SchemaInfo(revision, None, 0)
    return SchemaInfo(revision, row[0], int(row[1]))


def prepare_schema(
    url: str,
    *,
    auto_migrate: bool,
    embedding_model: str | None,
    embedding_dim: int | None,
) -> SchemaInfo:
    """Bring the schema to head (if allowed). A new database records ``embedding_model``
    and ``embedding_dim`` as the ones it was created for; every vector names its own model,
    so a database opened with another embedder keeps working (see ``reembed``)."""
    head = migrate.head_revision()
    info = read_schema_info(url)
    if info.revision != head:
        if not auto_migrate:
            where = "empty" if info.revision is None else f"at revision {info.revision}"
            raise MigrationRequiredError(
                f"the database is {where} but this library needs revision {head}. "
                "Run `mem01session db upgrade` (with MEM01_DATABASE_URL pointing at it), "
                "or pass auto_migrate=True."
            )
        log.info("migrating database from %s to %s", info.revision or "empty", head)
        migrate.upgrade(url, embedding_dim=embedding_dim, embedding_model=embedding_model)
        info = read_schema_info(url)
    if auto_migrate and embedding_model and embedding_dim:
        _index_episode_vectors(url, embedding_model, embedding_dim)
    return info


def _index_episode_vectors(url: str, model: str, dim: int) -> None:
    """The HNSW index over this model's episode vectors, made if missing (cheap for a
    model new to the database: a partial index holds that model's rows only). Where it
    cannot be made, recall scans exactly, as before the index existed: said, not raised."""
    import psycopg

    try:
        with psycopg.connect(url, autocommit=True) as conn:
            ensure_vector_index(conn, model, dim)
    except psycopg.Error as exc:
        log.warning(
            "could not index the episode vectors of %s (recall reads them exactly): %s",
            model,
            describe(exc),
        )
