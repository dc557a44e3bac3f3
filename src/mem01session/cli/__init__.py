"""The ``mem01session`` command."""

from __future__ import annotations

import typer

from .beliefs import app as beliefs_app
from .db import app as db_app
from .demo import demo
from .jobs import app as jobs_app
from .memory import erase, forget, recall
from .ui import ui

app = typer.Typer(
    name="mem01session",
    help="Two-tier memory for OpenAI Agents SDK sessions.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.add_typer(db_app, name="db")
app.command()(demo)
app.add_typer(beliefs_app, name="beliefs")
app.command()(recall)
app.command()(forget)
app.command()(erase)
app.add_typer(jobs_app, name="jobs")
app.command()(ui)


def main() -> None:
    """Console entry point."""
    app()
