"""``mem01session recall | forget | erase | reinstate``: read the block, retire a belief,
delete a user's memory, accept writes for an erased user again."""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING, Annotated

import typer

from ._args import check_positive, parse_id
from ._console import console
from ._errors import fail

if TYPE_CHECKING:
    from datetime import datetime

    from rich.table import Table

    from ..memory import Memory
    from ..memory.records import ApplyResult, Belief, EraseReceipt, RecallResult, ScoredEpisode

User = Annotated[str, typer.Option("--user", "-u", help="The user whose memory to use.")]


def recall(
    user: User,
    query: Annotated[str, typer.Argument(help="What the user just asked.")],
    budget: Annotated[
        int, typer.Option("--budget", help="Token budget of the block (header included).")
    ] = 800,
    history: Annotated[
        bool, typer.Option("--history", help="Also recall superseded and invalidated beliefs.")
    ] = False,
    explain: Annotated[
        bool,
        typer.Option("--explain", help="Show why each belief and quote is in the block."),
    ] = False,
    timezone: Annotated[
        str | None,
        typer.Option(
            "--timezone",
            help="The IANA zone whose days the block dates in and the query's days "
            '("yesterday") are read in; default: the one the user\'s sessions last gave, '
            "else UTC.",
        ),
    ] = None,
) -> None:
    """Print the memory block the model would see for QUERY.

    Example: mem01session recall --user alice "where do I live?" --explain
    """
    check_positive("--budget", budget)
    from rich.text import Text

    from ..checks import check_timezone
    from ._memory import with_memory
    from ._reads import require_user

    if timezone is not None:
        check_timezone("--timezone", timezone)
    zone = timezone

    async def work(memory: Memory) -> RecallResult:
        nonlocal zone
        await require_user(memory, user)
        if zone is None:
            summary = await memory.user(user)
            zone = summary.timezone if summary is not None else None
        return await memory.recall(
            user,
            query,
            max_tokens=budget,
            include_history=history,
            explain=explain,
            timezone=zone or "UTC",
        )

    result = with_memory(work)
    if result.text:
        console().rule("memory block")
        # Text, not markup: the block's "[active, ...]" must print as it is.
        console().print(Text(result.text), soft_wrap=True)
        console().rule()
    else:
        console().print(Text("no memory block: nothing recalled fits or matches"))
    console().print(
        Text(
            f"tokens: {result.tokens} of {result.max_tokens} (tokenizer {result.tokenizer}); "
            f"{_packed(result)} of {result.candidates} candidates packed; "
            f"days in {zone or 'UTC'}; {result.latency_ms:.0f} ms"
        )
    )
    if explain and not result.empty:
        console().print(_explained(result))


def _explained(result: RecallResult) -> Table:
    """Why each record is in the block, best first: one numbered entry per belief or
    quote, its scores on short lines (readable at 80 columns, where a table of eight
    score columns leaves no room for the words)."""
    from rich.table import Table
    from rich.text import Text

    from ..memory.ranking import (
        DAY_WEIGHT,
        EPISODE_FACTOR,
        INACTIVE_FACTOR,
        TEXT_WEIGHT,
        W_CONFIDENCE,
        W_RECENCY,
    )
    from ..memory.records import ScoredBelief
    from . import _render as render

    items: list[ScoredBelief | ScoredEpisode] = [*result.beliefs, *result.episodes]
    items.sort(key=lambda i: -i.score)
    grid = Table.grid(padding=(0, 1))
    grid.add_column(justify="right", no_wrap=True)
    grid.add_column()
    for n, item in enumerate(items, start=1):
        s = item.signals
        if isinstance(item, ScoredBelief):
            b = item.belief
            body = Text(f"#{b.id} ", style="bold")
            body.append(render.outside(b.content))
            body.append(" (")
            body += render.status(b.status)
            body.append(")")
            scores = _scores(s, ("fused", "relevance", "recency", "confidence"))
        else:
            e = item.episode
            body = Text(f"e#{e.id} ", style="bold")
            body.append(render.outside(f'"{e.content}"', style="italic"))
            body.append(f" (said {render.day(e.said_at)} in ")
            body.append(render.outside(e.session_id))
            body.append(")")
            scores = _scores(s, ("fused", "relevance", "recency"))
        body.append("\n" + scores)
        body.append("\n" + _retrievers(s))
        if s.get("other_model"):
            body.append("\nits vector was made by another model: found by its words only")
        grid.add_row(f"{n}.", body)
    base_r, base_c = 1.0 - W_RECENCY, 1.0 - W_CONFIDENCE
    note = Text(
        f"fused = relevance x ({base_r:.2f} + {W_RECENCY:.2f} recency) x ({base_c:.2f} + "
        f"{W_CONFIDENCE:.2f} confidence); a quote: x {EPISODE_FACTOR:.2f}, no confidence; a "
        f"belief no longer current (when the query names days: not known to hold then): "
        f"x {INACTIVE_FACTOR:.2f}. Relevance averages the two "
        f"retrievers' ranks (k = 60; text x its share x {TEXT_WEIGHT:g}), a quote said in the "
        f"days the question names adding {DAY_WEIGHT:g} x its rank's; text = the share of the "
        "question's word weight matched.",
        style="dim",
    )
    outer = Table.grid()
    outer.add_column()
    outer.add_row(Text("why each is in the block, best first", style="bold"))
    outer.add_row(grid)
    outer.add_row(note)
    return outer


def _scores(signals: dict[str, float], names: tuple[str, ...]) -> str:
    return "  ".join(f"{name} {signals.get(name, 0.0):.3f}" for name in names)


def _retrievers(signals: dict[str, float]) -> str:
    parts = []
    for name, label in (("vector", "vector"), ("text", "text")):
        rank = int(signals.get(f"{name}_rank", 0.0))
        found = f"{signals.get(name, 0.0):.3f} (rank {rank})" if rank else "not found"
        parts.append(f"{label} {found}")
    if signals.get("day_rank"):
        parts.append(f"said in the days asked about (rank {int(signals['day_rank'])})")
    return "  ".join(parts)


def _packed(result: RecallResult) -> str:
    beliefs = f"{len(result.beliefs)} belief{'' if len(result.beliefs) == 1 else 's'}"
    if not result.episodes:
        return beliefs
    return f"{beliefs} and {len(result.episodes)} quote{'' if len(result.episodes) == 1 else 's'}"


def forget(
    user: User,
    belief_id: Annotated[str, typer.Argument(metavar="ID", help="The belief id (e.g. 42).")],
    reason: Annotated[
        str, typer.Option("--reason", help="Why; kept in the ledger.")
    ] = "forgotten on request",
) -> None:
    """Mark a belief as no longer true; its text stays in the history.

    Example: mem01session forget --user alice 42 --reason "moved away"
    """
    bid = parse_id(belief_id)
    if not reason.strip():
        fail("--reason must not be empty")
    from rich.text import Text

    from . import _render as render
    from ._memory import with_memory
    from ._reads import require_belief, require_user

    async def work(memory: Memory) -> tuple[Belief, ApplyResult]:
        await require_user(memory, user)
        belief = await require_belief(memory, user, bid)
        if belief.status != "active":
            fail(f"belief #{bid} is already {belief.status}; only active beliefs can be forgotten")
        return belief, await memory.forget(user, bid, reason=reason)

    belief, result = with_memory(work)
    line = Text(f"forgot #{belief.id} ")
    line.append(render.outside(belief.content))
    line.append(" (now ")
    line += render.status("invalidated")
    line.append(f"); reason: {reason}; memory version {result.user_version}")
    console().print(line)


def erase(
    user: User,
    yes: Annotated[
        bool, typer.Option("--yes", help="Confirm: delete everything durable about the user.")
    ] = False,
    compact: Annotated[
        bool,
        typer.Option(
            "--compact",
            help="Then rewrite the memory tables and checkpoint, so that the database's "
            "files no longer hold the deleted rows (locks the tables meanwhile).",
        ),
    ] = False,
    transcripts: Annotated[
        bool,
        typer.Option(
            "--transcripts",
            help="Also delete the user's conversations from the transcript stores the "
            "library made under MEM01_HOME (overwritten on disk).",
        ),
    ] = False,
) -> None:
    """Hard-delete everything durable about the user; print the receipt.

    Deletes the user's beliefs, episodes, ledger, provenance and jobs; with --transcripts,
    also their conversations in the transcript stores under MEM01_HOME (a session's
    default store, the demo's, a SessionManager's there; a store the application gave a
    session elsewhere is its own to clean).

    After it, no query finds anything of the user; PostgreSQL's files may still hold the
    deleted bytes until their space is reused. --compact rewrites the tables and forces a
    checkpoint so that they do not (write-ahead log segments are recycled by later
    checkpoints; backups and replicas are yours to handle).

    Example: mem01session erase --user alice --yes --compact
    """
    if not yes:
        fail(f"erase deletes all durable memory of user {user!r} for good; add --yes to confirm")

    from rich.table import Table
    from rich.text import Text

    from . import _render as render
    from ._memory import with_memory
    from ._reads import require_user

    async def work(memory: Memory) -> tuple[EraseReceipt, list[str]]:
        await require_user(memory, user)
        receipt = await memory.erase(user, transcripts=transcripts)
        return receipt, (await memory.compact() if compact else [])

    receipt, rewritten = with_memory(work)
    table = Table(title=f"erase receipt for {user}", expand=False)
    table.add_column("table")
    table.add_column("rows deleted", justify="right")
    for name, count in receipt.deleted.items():
        table.add_row(name, str(count))
    table.add_row(Text("total", style="bold"), Text(str(receipt.total), style="bold"))
    console().print(table)
    line = Text(f"erased at {render.when(receipt.erased_at)}; new writes for this user are ")
    line.append(f"refused until: mem01session reinstate --user {shlex.quote(user)}")
    console().print(line)
    if rewritten:
        console().print(
            Text(
                f"compacted: {', '.join(rewritten)} rewritten, checkpoint done; the "
                "database's files no longer hold the deleted rows"
            )
        )
    for store in receipt.transcripts:
        said = (
            f"transcripts: {store.messages} message(s) of {store.conversations} "
            f"conversation(s) deleted from {store.store}"
        )
        console().print(Text(said + (f"; {store.problem}" if store.problem else "")))
    if transcripts and not receipt.transcripts:
        console().print(Text("transcripts: no transcript store of the library's here"))


def reinstate(user: User) -> None:
    """Accept new writes for an erased user again; what was erased does not come back.

    Exits 1 if the user is not erased (never erased, already reinstated, or unknown).

    Example: mem01session reinstate --user alice
    """
    from rich.text import Text

    from . import _render as render
    from ._memory import with_memory

    async def work(memory: Memory) -> datetime | None:
        return await memory.reinstate(user)

    erased_at = with_memory(work)
    if erased_at is None:
        fail(f"user {user!r} is not erased; nothing to reinstate")
    console().print(
        Text(
            f"reinstated user {user!r} (erased at {render.when(erased_at)}); new writes for "
            "this user are accepted again"
        )
    )
