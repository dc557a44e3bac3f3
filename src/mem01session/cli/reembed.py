"""``mem01session reembed``: give beliefs and episodes whose vectors another model made a
current one."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from ._args import check_positive
from ._console import console

if TYPE_CHECKING:
    from ..memory import Memory
    from ..memory.records import ReembedReport


def reembed(
    user: Annotated[
        str | None, typer.Option("--user", "-u", help="Only this user's memory.")
    ] = None,
    batch: Annotated[int, typer.Option("--batch", help="Records embedded per batch.")] = 64,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Only count what would be converted.")
    ] = False,
) -> None:
    """Re-embed beliefs and episodes whose vectors another embedding model made.

    After a change of MEM01_EMBEDDING_MODEL, beliefs and episodes embedded by the previous
    model are found by full text only until this gives them a vector of the configured
    model. Safe while the application runs; stop it at any time and run it again to
    finish.

    Example: mem01session reembed --user alice
    """
    check_positive("--batch", batch)
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

    from ._memory import with_memory

    async def work(memory: Memory) -> tuple[str, int, ReembedReport | None]:
        plan = await memory.reembed(user_id=user, dry_run=True)
        if dry_run or not plan.found:
            return plan.model, plan.found, None
        columns = ("{task.description}", BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
        with Progress(*columns, console=console(), transient=True) as bar:
            task = bar.add_task(f"re-embedding with {plan.model}", total=plan.found)
            report = await memory.reembed(
                user_id=user, batch_size=batch, progress=lambda n: bar.advance(task, n)
            )
        return plan.model, plan.found, report

    model, todo, report = with_memory(work)
    whose = f"of user {user!r} " if user is not None else ""
    if report is None:
        verb = "would be re-embedded" if todo else "need re-embedding"
        count = todo if todo else "no"
        console().print(f"{count} record(s) {whose}{verb} with {model}", highlight=False)
        return
    console().print(
        f"re-embedded {report.converted} record(s) {whose}with {model}"
        + (f"; {report.skipped} revised meanwhile, already current" if report.skipped else ""),
        highlight=False,
    )
