"""``mem01session backfill``: the conversations an application already keeps, through
memory's pipeline."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ._console import console
from ._errors import fail

if TYPE_CHECKING:
    from ..session.backfill import BackfillReport


def backfill(
    store: Annotated[
        str, typer.Argument(help="A SQLiteSession file, or an SQLAlchemy URL of the store.")
    ],
    user: Annotated[
        str | None, typer.Option("--user", "-u", help="Every conversation is this user's.")
    ] = None,
    users: Annotated[
        Path | None,
        typer.Option("--users", help="A CSV file of session_id,user_id rows."),
    ] = None,
    column: Annotated[
        str | None,
        typer.Option(
            "--user-column", help="TABLE.COLUMN of the store that holds each session's user."
        ),
    ] = None,
    sessions_table: Annotated[
        str, typer.Option("--sessions-table", help="The store's table of sessions.")
    ] = "agent_sessions",
    messages_table: Annotated[
        str, typer.Option("--messages-table", help="The store's table of messages.")
    ] = "agent_messages",
) -> None:
    """Feed the conversations an SDK session store already holds through memory, oldest
    first, each turn dated when it was said: episodes and beliefs as if the turns were
    happening.

    Say whose each conversation is with --user, --users or --user-column (a store of
    SessionManager's needs none of them). Stop it at any time and run it again: every turn
    is recorded exactly once.

    Example: mem01session backfill conversations.sqlite --user alice
    """
    if sum(x is not None for x in (user, users, column)) > 1:
        fail("give one of --user, --users and --user-column")
    mapping = _read_csv(users) if users is not None else None
    import asyncio

    from ..memory import Memory
    from ..session.backfill import Store, backfill, users_from_column
    from ._server import database_url
    from ._settings import load_settings

    settings = load_settings()
    opened = Store(store, sessions_table=sessions_table, messages_table=messages_table)
    whose: Any = user if user is not None else mapping
    if column is not None:
        whose = users_from_column(opened, column)
    database_url(settings)

    async def run() -> BackfillReport:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

        from ._progress import Rate

        columns = ("{task.description}", BarColumn(), MofNCompleteColumn(), Rate("turns"))
        with Progress(*columns, TimeRemainingColumn(), console=console(), transient=True) as bar:
            task = bar.add_task("backfilling", total=None)

            def shown(done: int, total: int) -> None:
                bar.update(task, completed=done, total=total)

            async with await Memory.open(settings) as memory:
                return await backfill(memory, opened, whose, progress=shown)

    try:
        report = asyncio.run(run())
    finally:
        opened.close()
    said = (
        f"{report.conversations} conversation(s), {report.turns} turn(s): "
        f"{report.recorded} recorded now, {report.turns - report.recorded} before"
    )
    console().print(said, highlight=False)
    if report.left_out:
        console().print(
            f"left out {len(report.left_out)} conversation(s) no user was given for",
            highlight=False,
        )
    for erased, turns in report.refused.items():
        console().print(f"refused {turns} turn(s) of erased user {erased!r}", highlight=False)
    if report.unreadable:
        console().print(
            f"skipped {report.unreadable} stored item(s) that are not JSON (not written by "
            "an SDK session)",
            highlight=False,
        )


def _read_csv(path: Path) -> dict[str, str]:
    """``session_id,user_id`` rows (a header row naming them is skipped)."""
    if not path.is_file():
        fail(f"no such file: {path}")
    out: dict[str, str] = {}
    with path.open(newline="", encoding="utf-8") as file:
        for number, row in enumerate(csv.reader(file), start=1):
            if not row or (number == 1 and row[:2] == ["session_id", "user_id"]):
                continue
            if len(row) != 2 or not row[0].strip() or not row[1].strip():
                fail(f"{path}, line {number}: expected session_id,user_id")
            out[row[0].strip()] = row[1].strip()
    return out
