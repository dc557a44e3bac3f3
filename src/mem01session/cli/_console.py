"""The consoles the commands print to, made on first use (rich is imported only then)."""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console


@cache
def console() -> Console:
    """Standard output."""
    from rich.console import Console

    return Console()


@cache
def err_console() -> Console:
    """Standard error: error lines."""
    from rich.console import Console

    return Console(stderr=True)
