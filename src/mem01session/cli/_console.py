"""The consoles the commands print to, made on first use (rich is imported only then)."""

from __future__ import annotations

import os
import sys
from functools import cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

PIPED_WIDTH = 10_000
"""The most a table printed to a pipe or a file may take (see :func:`console`)."""


@cache
def console() -> Console:
    """Standard output. On a terminal, as wide as it; to a pipe or a file (no ``COLUMNS``
    set), 80 columns, but a table as wide as its longest row: no cell is cut or folded, so
    each row is one line for ``grep``."""
    from rich.console import Console
    from rich.measure import Measurement
    from rich.table import Table

    if sys.stdout.isatty() or os.environ.get("COLUMNS"):
        return Console()

    class Piped(Console):
        def print(self, *objects: Any, **options: Any) -> None:
            wide = self.options.update(width=PIPED_WIDTH)
            tables = [
                Measurement.get(self, wide, o).maximum for o in objects if isinstance(o, Table)
            ]
            if not tables:
                super().print(*objects, **options)
                return
            width = self.width
            self.width = max(width, *tables)  # print() caps a width given it at this one
            try:
                super().print(*objects, **options)
            finally:
                self.width = width

    return Piped()


@cache
def err_console() -> Console:
    """Standard error: error lines."""
    from rich.console import Console

    return Console(stderr=True)
