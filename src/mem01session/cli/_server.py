"""Reaching the database from a command: the configured server, or the embedded one.

:func:`database_url` is the one way every command finds its database, so that a server
that is down reads the same whichever command met it, and so that starting the embedded
server (a second or more) is announced on stderr, with a spinner on a terminal, instead of
looking like a command that hangs. A server the command started stops again when it
exits, unless ``mem01session db start`` keeps it running (then later commands reuse it and
answer at once); one it found running it leaves running; a running application or
``mem01session ui`` holds it too while they run.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from ..errors import DatabaseError

if TYPE_CHECKING:
    from ..config import Settings

T = TypeVar("T")

KEEP_HINT = "mem01session db start keeps it running between commands"


def database_url(settings: Settings, *, check: bool = True) -> tuple[str, bool]:
    """The URL to connect to, and whether it is the embedded server's (started here, with
    a notice, when it is not running). A configured server is checked once (unless
    ``check`` is False): when it cannot be reached, every command says so in the same
    words."""
    if settings.database_url:
        if check:
            check_reachable(settings)
        return settings.database_url, False
    from ..memory.embedded_server import embedded_url, server_status

    # A server this command did not start is not stopped when it ends (a psql opened from
    # `db url`, an application between its runs, may be using it).
    started = not server_status(settings.home).running
    url = starting(settings.home, lambda: embedded_url(settings.home, stop_on_exit=started))
    return url, True


def starting(home: Path, start: Callable[[], T], *, kept: bool = False) -> T:
    """Run ``start`` (which attaches to the embedded server under ``home``), saying on
    stderr that the server is being started when it is not running yet (``kept``: it is
    started to be kept running, by ``db start``)."""
    from ..memory.embedded_server import server_status

    if server_status(home).running:
        return start()
    from ._console import err_console

    console = err_console()
    where = home.expanduser().resolve() / "pg"
    until = (
        "kept running until mem01session db stop"
        if kept
        else f"it stops when this command ends; {KEEP_HINT}"
    )
    console.print(
        f"starting the embedded PostgreSQL in {where} ({until})",
        highlight=False,
        markup=False,
        soft_wrap=True,
    )
    if not console.is_terminal:
        return start()
    with console.status("starting the embedded PostgreSQL", spinner="dots"):
        return start()


def check_reachable(settings: Settings) -> None:
    """Raise a :class:`DatabaseError` naming the server (password masked) and why, when
    the configured database cannot be connected to."""
    import psycopg

    assert settings.database_url
    try:
        psycopg.connect(settings.database_url, connect_timeout=10).close()
    except psycopg.Error as exc:
        reason = _reason(exc)
    else:
        return
    # Raised outside the except block: the driver's error (which may quote part of a
    # malformed password) must not ride along as the context.
    raise DatabaseError(
        f"cannot connect to the database at {settings.safe_database_url} "
        f"({settings.database_url_variable}): {reason}"
    )


def _reason(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
    first = lines[0].removeprefix("connection failed: ") if lines else type(exc).__name__
    return "; ".join([first, *lines[1:2]])
