"""``mem01session users``: who has durable memory, how much, and since when it changed."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from ._args import check_positive
from ._console import console

if TYPE_CHECKING:
    from ..memory import MemoryReads
    from ..memory.records import UserSummary

USER_MIN_WIDTH = 16
"""The narrowest the user column gets (a longer id folds onto more lines)."""


def users(
    contains: Annotated[
        str | None, typer.Option("--contains", help="Only users whose id contains this.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
    limit: Annotated[
        int, typer.Option("--limit", help="At most this many, most recently active first.")
    ] = 200,
) -> None:
    """List the users with durable memory, most recently active first.

    For each: current beliefs (and all of them, history included), the episodes recall
    can quote, the last activity (an applied turn, an erase or a reinstatement) and
    whether the user is erased (erased users keep a tombstone that refuses new writes).

    Example: mem01session users --contains alice
    """
    check_positive("--limit", limit)
    from rich.table import Table
    from rich.text import Text

    from . import _render as render
    from ._reads import with_reads

    async def work(reads: MemoryReads) -> list[UserSummary]:
        return await reads.users(contains=contains, limit=limit)

    found = with_reads(work)
    if as_json:
        typer.echo(
            render.dumps(
                [
                    {
                        "user_id": u.user_id,
                        "beliefs": u.beliefs,
                        "current_beliefs": u.active,
                        "episodes": u.episodes,
                        "timezone": u.timezone,
                        "last_activity": u.updated_at,
                        "erased_at": u.erased_at,
                    }
                    for u in found
                ]
            )
        )
        return
    if not found:
        what = f" whose id contains {contains!r}" if contains else ""
        console().print(Text(f"no users with durable memory{what}"))
        return
    show_episodes = any(u.episodes for u in found)
    show_zones = any(u.timezone for u in found)
    table = Table(title="users", expand=False)
    # The id is what a row is for: narrow terminals fold it, never squeeze it away.
    widest = max(len(u.user_id) for u in found)
    table.add_column("user", min_width=min(widest, USER_MIN_WIDTH), overflow="fold")
    table.add_column("beliefs", justify="right", no_wrap=True)
    if show_episodes:
        table.add_column("episodes", justify="right", no_wrap=True)
    if show_zones:
        table.add_column("time zone", min_width=8, overflow="fold")
    table.add_column("last activity", no_wrap=True)
    table.add_column("erased", no_wrap=True)
    for u in found:
        beliefs = f"{u.active}" if u.total == u.active else f"{u.active} of {u.total}"
        row: list[Text | str] = [render.outside(u.user_id), beliefs]
        if show_episodes:
            row.append(str(u.episodes))
        if show_zones:
            row.append(render.outside(u.timezone or "-"))
        row.append(render.when(u.updated_at))
        row.append(Text(f"erased {render.day(u.erased_at)}", style="red") if u.erased else "-")
        table.add_row(*row)
    console().print(table)
    console().print(
        Text("beliefs: current (of all, superseded and invalidated ones included)", style="dim")
    )
