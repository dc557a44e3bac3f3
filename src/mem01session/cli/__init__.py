"""The ``mem01session`` command."""

from __future__ import annotations

import typer

from .db import app as db_app
from .demo import demo

app = typer.Typer(
    name="mem01session",
    help="Two-tier memory for OpenAI Agents SDK sessions.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.add_typer(db_app, name="db")
app.command()(demo)


def main() -> None:
    """Console entry point."""
    app()
