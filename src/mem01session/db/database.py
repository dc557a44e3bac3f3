"""The async database handle: one SQLAlchemy engine on psycopg 3 with a pool."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pgvector.psycopg import register_vector_async
from sqlalchemy import event, text
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from ..config import default_home
from ..errors import DatabaseError, MigrationRequiredError
from ..logs import describe, get_logger
from ..redaction import redact_dsn
from . import migrate
from .direct import DirectPool
from .embedded import embedded_url, restart_if_stopped
from .urls import sqlalchemy_url

log = get_logger(__name__)


@dataclass(frozen=True)
class SchemaInfo:
    """What the database was built for."""

    revision: str | None
    embedding_model: str | None
    embedding_dim: int


class Database:
    """Two pools on one PostgreSQL database.

    ``sa_engine`` (SQLAlchemy, async) serves transactions and everything off the per-run
    path; ``direct`` (:class:`DirectPool`) the single statements every run makes (the
    recall, the enqueue), without SQLAlchemy's per-statement overhead. Open it with
    :meth:`open`; close it with :meth:`close` (or ``async with``).
    """

    def __init__(
        self,
        sa_engine: AsyncEngine,
        url: str,
        *,
        embedded: bool,
        pool_size: int = 5,
        home: Path | None = None,
    ) -> None:
        self.sa_engine = sa_engine
        self.direct = DirectPool(
            url, max_open=pool_size * 3, max_idle=pool_size, on_connect_error=self.revive
        )
        self._url = url
        self.embedded = embedded
        self._home = home if embedded else None
        self._revive_lock = asyncio.Lock()

    def __repr__(self) -> str:
        return f"Database(url={redact_dsn(self._url)!r}, embedded={self.embedded})"

    @property
    def url(self) -> str:
        """The libpq URL (contains the password, if any: never log it)."""
        return self._url

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
        await asyncio.to_thread(
            prepare_schema,
            url,
            auto_migrate=bool(auto_migrate),
            embedding_model=embedding_model,
            embedding_dim=embedding_dim,
        )
        engine = create_async_engine(
            sqlalchemy_url(url),
            pool_size=pool_size,
            max_overflow=pool_size * 2,
            # No ping per checkout: it costs a round trip on every recall and enqueue. After a
            # server restart the first statement on a stale connection fails, SQLAlchemy
            # invalidates the pool, and the session's fail-open path retries the turn.
            pool_pre_ping=False,
            pool_recycle=1800,
        )

        @event.listens_for(engine.sync_engine, "connect")
        def _register_vector(dbapi_connection: Any, _record: Any) -> None:
            dbapi_connection.run_async(register_vector_async)

        db = cls(engine, url, embedded=embedded, pool_size=pool_size, home=home)
        failure: str | None = None
        try:
            async with engine.connect() as conn:
                await conn.execute(text("SELECT 1"))
        except (SQLAlchemyError, OSError) as exc:
            failure = describe(exc)
        if failure is not None:
            # Raised out here, not in the except block: the driver's exception (whose text
            # may hold part of a malformed password) must not ride along as the context.
            await engine.dispose()
            raise DatabaseError(f"could not connect to {db!r}: {failure}")
        return db

    async def revive(self) -> bool:
        """After a failed connection: start the embedded server again if it stopped while
        this process used it (True when restarted). A no-op for an external database."""
        if self._home is None:
            return False
        async with self._revive_lock:
            return await asyncio.to_thread(restart_if_stopped, self._home)

    async def close(self) -> None:
        await self.direct.close()
        await self.sa_engine.dispose()

    async def __aenter__(self) -> Database:
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.close()


def read_schema_info(url: str) -> SchemaInfo:
    """Revision and embedding contract of the database at ``url``."""
    from sqlalchemy import create_engine

    engine = create_engine(sqlalchemy_url(url))
    failure: str | None = None
    try:
        with engine.connect() as conn:
            revision = migrate._current(conn)
            row = None
            if revision is not None:
                row = conn.execute(
                    text("SELECT embedding_model, embedding_dim FROM memory_meta WHERE id = 1")
                ).first()
    except SQLAlchemyError as exc:
        failure = describe(exc)
    finally:
        engine.dispose()
    if failure is not None:  # raised outside the except block: no driver error as context
        raise DatabaseError(f"could not connect to {redact_dsn(url)!r}: {failure}")
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
    return info
