"""The ``mem01session`` command.

Startup is kept light: this package and the command modules import only typer at module
level; each command imports the engine, the database drivers, Alembic, the Agents SDK
and rich's tables when it runs. ``mem01session --help`` therefore loads none of them.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import sys
from typing import Annotated, NoReturn

import typer

from ._errors import OneLineErrors
from ._help import TidyCommand
from .backfill import backfill
from .beliefs import app as beliefs_app
from .db import app as db_app
from .demo import demo
from .episodes import app as episodes_app
from .jobs import app as jobs_app
from .mcp import mcp
from .memory import erase, forget, recall, reinstate
from .moving import export, import_
from .reembed import reembed
from .ui import ui
from .users import users
from .worker import worker

app = typer.Typer(
    name="mem01session",
    cls=OneLineErrors,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _print_version(value: bool) -> None:
    if not value:
        return
    from importlib.metadata import PackageNotFoundError, version

    try:
        found = version("mem01session")
    except PackageNotFoundError:  # run from a source tree that was never installed
        found = "(not installed)"
    typer.echo(f"mem01session {found}")
    raise typer.Exit()


@app.callback()
def root(
    debug: Annotated[
        bool,
        typer.Option("--debug", help="On an error, show the full traceback instead of one line."),
    ] = False,
    show_version: Annotated[
        bool,
        typer.Option(
            "--version", help="Print the version and exit.", callback=_print_version, is_eager=True
        ),
    ] = False,
) -> None:
    """Two-tier memory for OpenAI Agents SDK sessions.

    Every error is one line on stderr and exit code 1 (with --debug: the traceback).
    A command group given no command prints its help, with exit code 2.
    """


app.add_typer(db_app, name="db")
app.command(cls=TidyCommand)(demo)
app.command(cls=TidyCommand)(users)
app.add_typer(beliefs_app, name="beliefs")
app.add_typer(episodes_app, name="episodes")
app.command(cls=TidyCommand)(recall)
app.command(cls=TidyCommand)(forget)
app.command(cls=TidyCommand)(erase)
app.command(cls=TidyCommand)(reinstate)
app.command(cls=TidyCommand)(reembed)
app.command(cls=TidyCommand)(export)
app.command(cls=TidyCommand, name="import")(import_)
app.command(cls=TidyCommand)(backfill)
app.add_typer(jobs_app, name="jobs")
app.command(cls=TidyCommand)(ui)
app.command(cls=TidyCommand)(mcp)
app.command(cls=TidyCommand)(worker)


def main() -> None:
    """Console entry point. SIGTERM (what systemd, Docker and ``timeout`` send) stops a
    command as Ctrl+C does, so that what it started (the embedded server) is stopped and
    released on the way out instead of being left running."""
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        app()
    except SystemExit as done:
        _exit(done.code)
    _exit(0)


def _exit(code: object) -> NoReturn:
    """End the process as soon as the command is done: its output flushed and the exit
    handlers run (the embedded server's handle released, the logs flushed), without the
    interpreter tearing down every module it imported, which takes a quarter of a second
    once SQLAlchemy, NumPy and pydantic are loaded, after the command has nothing left to
    do. The command has closed what it opened (its database, its pools) by then."""
    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code
    else:  # sys.exit("message"), as Python itself prints it
        print(code, file=sys.stderr)
        status = 1
    _flush()
    atexit._run_exitfuncs()
    _flush()
    os._exit(status)


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe (| head): nothing to do
            stream.flush()
