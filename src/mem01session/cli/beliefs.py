"""``mem01session beliefs``: read a user's beliefs, their ledger and provenance."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from ._args import check_positive, parse_id
from ._console import console
from ._help import TidyCommand, TidyGroup

if TYPE_CHECKING:
    from ..memory import MemoryReads
    from ..memory.records import Belief, Episode, LedgerEvent

app = typer.Typer(cls=TidyGroup, help="Inspect a user's long-term beliefs.", no_args_is_help=True)

User = Annotated[str, typer.Option("--user", "-u", help="The user whose memory to read.")]
Limit = Annotated[int, typer.Option("--limit", help="At most this many (most recent) rows.")]


@app.command("list", cls=TidyCommand)
def list_beliefs(
    user: User,
    show_all: Annotated[
        bool, typer.Option("--all", help="Include superseded, invalidated and merged beliefs.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
    limit: Limit = 100,
) -> None:
    """List the user's current beliefs (or all of them, with status and validity).

    Example: mem01session beliefs list --user alice
    """
    check_positive("--limit", limit)
    from rich.text import Text

    from . import _render as render
    from ._reads import require_user, with_reads

    async def work(reads: MemoryReads) -> list[Belief]:
        await require_user(reads, user)
        return await reads.beliefs(user, include_inactive=show_all, limit=limit)

    beliefs = with_reads(work)
    if as_json:
        typer.echo(render.dumps(beliefs))
        return
    if not beliefs:
        what = "beliefs" if show_all else "current beliefs"
        console().print(Text(f"no {what} for user {user!r}"))
        return
    console().print(render.beliefs_table(beliefs, show_all=show_all))


@app.command(cls=TidyCommand)
def history(user: User, limit: Limit = 200) -> None:
    """Show the user's ledger as a timeline: op, belief, before -> after, reason, time.

    Example: mem01session beliefs history --user alice
    """
    check_positive("--limit", limit)
    from rich.text import Text

    from . import _render as render
    from ._reads import require_user, with_reads

    async def work(reads: MemoryReads) -> list[LedgerEvent]:
        await require_user(reads, user)
        return await reads.history(user, limit=limit)

    events = with_reads(work)
    if not events:
        console().print(Text(f"no ledger events for user {user!r}"))
        return
    console().print(render.ledger_table(events, title=f"ledger of {user}"))


@app.command(cls=TidyCommand)
def show(
    belief_id: Annotated[str, typer.Argument(metavar="ID", help="The belief id (e.g. 42).")],
    user: User,
) -> None:
    """Show one belief with its provenance (sources) and versions (its ledger events).

    Example: mem01session beliefs show 42 --user alice
    """
    bid = parse_id(belief_id)
    from rich.text import Text

    from . import _render as render
    from ._reads import require_belief, require_user, with_reads

    async def work(reads: MemoryReads) -> tuple[Belief, list[LedgerEvent], list[Episode]]:
        await require_user(reads, user)
        belief = await require_belief(reads, user, bid)
        ids = dict.fromkeys(s.episode_id for s in belief.sources if s.episode_id is not None)
        episodes = [await reads.episode(user, i) for i in ids if i is not None]
        return belief, await reads.history(user, belief_id=bid), episodes

    belief, events, episodes = with_reads(work)
    head = Text(f"#{belief.id} ", style="bold")
    head.append(render.outside(belief.content))
    console().print(head)
    facts = [
        ("status", render.status(belief.status) + Text(f" {render.link(belief)}".rstrip())),
        ("valid", Text(render.validity(belief))),
        ("confidence", Text(f"{belief.confidence:.2f}")),
        ("version", Text(str(belief.version))),
        ("key", render.outside(belief.key or "-")),
        ("created", Text(render.when(belief.created_at))),
        ("updated", Text(render.when(belief.updated_at))),
        ("confirmed", Text(render.when(belief.last_confirmed_at))),
    ]
    for name, value in facts:
        console().print(Text(f"  {name:<11}") + value)
    if belief.sources:
        console().print(render.sources_table(belief.sources))
    else:
        console().print(Text("no recorded sources"))
    for episode in episodes:
        console().print(Text("  said: ") + render.said(episode))
    console().print(render.ledger_table(events, title="versions"))
