"""``mem01session jobs``: the extraction job queue: list jobs, send failed ones back.

The list shows a job's ids, state and error, never the turn it carries.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from ._args import check_positive, parse_id
from ._console import console
from ._errors import fail
from ._help import TidyCommand, TidyGroup

if TYPE_CHECKING:
    from ..memory import Memory, MemoryReads
    from ..memory.records import Job

app = typer.Typer(cls=TidyGroup, help="Inspect and retry extraction jobs.", no_args_is_help=True)

JOB_STYLE = {"pending": "cyan", "running": "magenta", "done": "green", "failed": "red"}
COLUMNS = ("id", "user", "session", "status", "tries", "created", "updated", "last error / notes")


@app.command("list", cls=TidyCommand)
def list_cmd(
    failed: Annotated[bool, typer.Option("--failed", help="Only jobs that gave up.")] = False,
    user: Annotated[str | None, typer.Option("--user", "-u", help="Only this user's jobs.")] = None,
    limit: Annotated[int, typer.Option("--limit", help="At most this many, newest first.")] = 50,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
) -> None:
    """List extraction jobs, newest first (never the text of their turns).

    Example: mem01session jobs list --failed --json
    """
    check_positive("--limit", limit)
    from rich.table import Table
    from rich.text import Text

    from . import _render as render
    from ._reads import require_user, with_reads

    async def work(reads: MemoryReads) -> list[Job]:
        if user is not None:
            await require_user(reads, user)
        status = "failed" if failed else None
        return await reads.jobs(user_id=user, status=status, limit=limit)

    jobs = with_reads(work)
    if as_json:
        typer.echo(
            render.dumps(
                [
                    {
                        "id": j.id,
                        "user_id": j.user_id,
                        "session_id": j.session_id,
                        "status": j.status,
                        "attempts": j.attempts,
                        "created_at": j.created_at,
                        "updated_at": j.updated_at,
                        "last_error": j.last_error,
                        "notes": j.notes.splitlines() if j.notes else [],
                        "usage": j.usage,
                    }
                    for j in jobs
                ]
            )
        )
        return
    if not jobs:
        console().print(Text("no failed jobs" if failed else "no jobs"))
        return
    table = Table(title="failed jobs" if failed else "jobs", expand=False)
    for name in COLUMNS:
        table.add_column(name, no_wrap=name in {"id", "status", "tries"})
    for j in jobs:  # j.payload (the turn's text) is never shown
        table.add_row(
            f"#{j.id}",
            render.outside(j.user_id),
            render.outside(j.session_id),
            Text(j.status, style=JOB_STYLE.get(j.status, "")),
            str(j.attempts),
            render.when(j.created_at),
            render.when(j.updated_at),
            render.outside(j.last_error, style="red")
            if j.last_error
            else render.outside(j.notes or "", style="dim"),
        )
    console().print(table)


@app.command("retry", cls=TidyCommand)
def retry_cmd(
    job_id: Annotated[str, typer.Argument(metavar="ID", help="A failed job's id.")],
) -> None:
    """Send a failed job back to the queue (pending, attempts reset).

    A job of a user whose memory is erased is refused (exit 1): erased means no new writes.

    Example: mem01session jobs retry 17
    """
    jid = parse_id(job_id, "job")
    from rich.text import Text

    from . import _render as render
    from ._memory import with_memory

    async def work(memory: Memory) -> Job | None:
        found = await memory.job(jid)
        if found is None or found.status != "failed":
            return None
        owner = await memory.user(found.user_id)
        if owner is not None and owner.erased:
            fail(
                f"job #{jid} belongs to user {found.user_id!r}, whose memory is erased; not retried"
            )
        if found.refused:
            fail(f"job #{jid} records a turn that was never stored; there is nothing to retry")
        # The retry statement checks both again, atomically (an erase may come in between).
        return await memory.retry_job(jid)

    job = with_memory(work)
    if job is None:
        fail(f"no failed job #{jid}")
    line = Text(f"job #{job.id} of user ")
    line.append(render.outside(job.user_id))
    line.append(f" is {job.status} again; a running worker will pick it up")
    console().print(line)
