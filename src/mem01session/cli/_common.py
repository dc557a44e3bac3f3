"""Helpers shared by the CLI commands: settings, database URL, errors."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import NoReturn, TypeVar

import typer
from rich.console import Console

from ..config import Settings
from ..db.embedded import embedded_url
from ..errors import Mem01Error
from ..redaction import redact

console = Console()
err_console = Console(stderr=True)

T = TypeVar("T")


def fail(message: str, code: int = 1) -> NoReturn:
    """Print a one-line error (secrets masked) and exit non-zero."""
    err_console.print(f"[bold red]error:[/] {redact(message)}", highlight=False)
    raise typer.Exit(code)


@contextmanager
def friendly_errors() -> Iterator[None]:
    """Turn library errors into a clean message and exit code 1."""
    try:
        yield
    except Mem01Error as exc:
        fail(str(exc))


def database_url(settings: Settings) -> tuple[str, bool]:
    """The configured URL, or the embedded server's; and whether it is embedded."""
    if settings.database_url:
        return settings.database_url, False
    return embedded_url(settings.home), True


def run_sync(fn: Callable[[], T]) -> T:
    with friendly_errors():
        return fn()
    raise AssertionError("unreachable")  # pragma: no cover
