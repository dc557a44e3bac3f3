"""``mem01session episodes``: what a user said, verbatim and dated, conversation by
conversation."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from ._args import check_positive
from ._console import console
from ._help import TidyCommand, TidyGroup

if TYPE_CHECKING:
    from ..memory import MemoryReads
    from ..memory.records import Episode

app = typer.Typer(
    cls=TidyGroup,
    help="Inspect what a user said (episodes: kept verbatim beside the beliefs).",
    no_args_is_help=True,
)


@app.command("list", cls=TidyCommand)
def list_episodes(
    user: Annotated[str, typer.Option("--user", "-u", help="The user whose words to read.")],
    conversation: Annotated[
        str | None,
        typer.Option("--conversation", "-c", help="Only this conversation (its session id)."),
    ] = None,
    contains: Annotated[
        str | None, typer.Option("--contains", help="Only episodes whose words contain this.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
    limit: Annotated[
        int, typer.Option("--limit", help="At most this many (most recent) episodes.")
    ] = 100,
) -> None:
    """List the user's episodes, oldest first, by conversation: when, who, the words, the
    beliefs drawn from them; hidden ones (a belief drawn from them was forgotten) are
    marked.

    Example: mem01session episodes list --user alice --conversation chat-7
    """
    check_positive("--limit", limit)
    from rich.text import Text

    from . import _render as render
    from ._reads import require_user, with_reads

    async def work(reads: MemoryReads) -> list[Episode]:
        await require_user(reads, user)
        return await reads.episodes(user, session_id=conversation, contains=contains, limit=limit)

    episodes = with_reads(work)
    if as_json:
        typer.echo(render.dumps(episodes))
        return
    if not episodes:
        where = f" in conversation {conversation!r}" if conversation else ""
        console().print(Text(f"no episodes for user {user!r}{where}"))
        return
    console().print(render.episodes_table(episodes))
