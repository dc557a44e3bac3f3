"""The command line's one error handler: every failure is one line on stderr and exit code 1.

:class:`OneLineErrors` is the root command group. Whatever a command raises (a library
error, a database or migration error, an ``OSError``, a usage error) is printed as
``error: <what was wrong>``, secrets masked, and the process exits 1. With the global
``--debug`` flag an unexpected exception propagates instead, so its traceback is shown.

This module imports nothing heavy: the libraries whose exceptions it describes are
recognised by their module name, never imported here.
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import Any, NoReturn, Protocol, cast

import typer

from ..errors import Mem01Error
from ..secrets.redaction import redact
from ._help import TidyGroup

DEBUG_PARAM = "debug"


class _UsageError(Protocol):
    def format_message(self) -> str: ...


# Recent typer releases ship their own copy of click, older ones use click itself: take
# click's base class of usage errors from typer, whichever it is.
_CLICK_ERROR = cast(
    type[Exception], next(c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException")
)


def one_line(message: str) -> str:
    """``message`` flattened to one line, secrets masked."""
    return redact(" ".join(message.split()))


def print_error(message: str) -> None:
    """Print ``error: message`` on one line of stderr (never wrapped, never read as markup)."""
    from rich.markup import escape

    from ._console import err_console

    err_console().print(
        f"[bold red]error:[/] {escape(one_line(message))}", highlight=False, soft_wrap=True
    )


def fail(message: str) -> NoReturn:
    """Print a one-line error and exit 1."""
    print_error(message)
    raise typer.Exit(1)


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


def _library(exc: BaseException) -> str:
    return type(exc).__module__.split(".", 1)[0]


def describe(exc: BaseException) -> str:
    """What went wrong, in one line, for an exception a command did not handle."""
    if isinstance(exc, Mem01Error):
        return str(exc)
    library = _library(exc)
    if library == "alembic":
        return f"migration failed: {_first_line(exc)}"
    if library in ("sqlalchemy", "psycopg", "asyncpg"):
        cause = getattr(exc, "orig", None) or exc
        return f"database error: {_first_line(cause)}"
    if isinstance(exc, OSError) and exc.strerror:
        if exc.filename is None:
            return exc.strerror
        where = str(exc.filename)
        if exc.filename2 is not None:
            where += f" -> {exc.filename2}"
        return f"{where}: {exc.strerror}"
    return f"{type(exc).__name__}: {_first_line(exc)}"


def _usage(exc: Exception) -> str:
    """A usage error (missing option, bad value) and where to read the command's help."""
    message = cast(_UsageError, exc).format_message().rstrip(".")
    path: str | None = getattr(getattr(exc, "ctx", None), "command_path", None)
    if path:
        message += f" (see: {path} --help)"
    return message


def _shows_help(exc: Exception) -> bool:
    # A group run without a command prints its help (click >= 8.2 signals it this way).
    return type(exc).__name__ == "NoArgsIsHelpError"


class OneLineErrors(TidyGroup):
    """The root group: turns every exception into one line and exit code 1.

    (Contexts are typed ``Any``: their class depends on the typer release.)
    """

    def make_context(
        self, info_name: str | None, args: list[str], parent: Any = None, **extra: Any
    ) -> Any:
        try:
            return super().make_context(info_name, args, parent, **extra)
        except _CLICK_ERROR as exc:  # a bad global option
            if _shows_help(exc):
                raise
            fail(_usage(exc))

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except (typer.Exit, typer.Abort):
            raise
        except _CLICK_ERROR as exc:
            if _shows_help(exc):
                raise
            fail(_usage(exc))
        except BrokenPipeError:
            # The reader left (`export ... | head`): what it took was written, say nothing;
            # the interpreter's final flush of stdout would fail again, so point it nowhere.
            with contextlib.suppress(OSError, ValueError):  # not a file: a test's capture
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            raise typer.Exit(141) from None  # as a shell reports a command ended by SIGPIPE
        except Exception as exc:
            if ctx.params.get(DEBUG_PARAM):
                raise
            fail(describe(exc))
