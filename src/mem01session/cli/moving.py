"""``mem01session export | import``: a user's memory as a document, and back."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TextIO

import typer

from ._console import console
from ._errors import fail

if TYPE_CHECKING:
    from ..memory import Memory
    from ..memory.records import ImportReport


def export(
    user: Annotated[
        list[str] | None,
        typer.Option("--user", "-u", help="A user to export (repeat for several)."),
    ] = None,
    every: Annotated[
        bool, typer.Option("--all", help="Every user, erased ones as their tombstone.")
    ] = False,
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="The file to write (default: standard output)."),
    ] = None,
    transcripts: Annotated[
        bool,
        typer.Option(
            "--transcripts",
            help="Also the users' conversations, from the transcript stores under MEM01_HOME.",
        ),
    ] = False,
) -> None:
    """Write users' memory as a document (JSON Lines): what they said, their beliefs with
    versions and sources, the ledger.

    The document is what a user's request for their data gets, and what `mem01session
    import` reads in another deployment. Streams in constant memory; a file is written
    whole or not at all.

    Example: mem01session export --user alice -o alice.jsonl
    """
    if not user and not every:
        fail("name the users to export (--user U) or pass --all")
    if user and every:
        fail("--user and --all exclude each other")
    from ._memory import with_memory

    wanted = None if every else user

    async def copy(memory: Memory, out: TextIO) -> int:
        records = 0
        with _counter("exporting", output is not None) as advance:
            async for line in memory.export_lines(wanted, transcripts=transcripts):
                out.write(line + "\n")
                records += 1
                advance(1)
        return records

    async def work(memory: Memory) -> int:
        if output is None:
            return await copy(memory, sys.stdout)
        part = output.with_name(output.name + ".part")
        try:
            with part.open("w", encoding="utf-8") as out:
                records = await copy(memory, out)
                out.flush()
                os.fsync(out.fileno())
            part.replace(output)
        finally:
            part.unlink(missing_ok=True)
        return records

    records = with_memory(work)
    if output is not None:
        console().print(f"wrote {records} lines to {output}", highlight=False)


def import_(
    path: Annotated[Path, typer.Argument(help="The document (or mem0's JSON) to import.")],
    source: Annotated[
        str,
        typer.Option(
            "--from",
            help="What wrote the file: mem01session (an export) or mem0 (its get_all JSON).",
        ),
    ] = "mem01session",
    user: Annotated[
        str | None,
        typer.Option("--user", "-u", help="With --from mem0: the user of memories naming none."),
    ] = None,
) -> None:
    """Import a document into memory: checked whole first (a bad line is named and nothing
    is written), then each user in one transaction, embedded with the configured model.

    A user who already has memory here is refused; one this same document was imported
    for before is skipped (importing twice changes nothing); an erased user is refused
    until reinstated. With --from mem0, each of mem0's memories becomes a belief whose
    source is mem0, dated as mem0 dated it.

    Example: mem01session import alice.jsonl
    """
    if source not in ("mem01session", "mem0"):
        fail(f"--from must be mem01session or mem0, got {source!r}")
    if user is not None and source != "mem0":
        fail("--user names the user of mem0 memories; a document names its own")
    from ._memory import with_memory

    async def work(memory: Memory) -> ImportReport:
        with _counter("importing", True) as advance:
            return await memory.import_file(
                path,
                source="mem0" if source == "mem0" else "mem01session",
                user_id=user,
                progress=advance,
            )

    report = with_memory(work)
    for done in report.users:
        if done.skipped:
            said = "already imported from this document: unchanged"
        else:
            said = f"{done.beliefs} beliefs, {done.episodes} episodes, {done.events} ledger events"
        if done.transcripts:
            said += f"; {done.transcripts} transcript items"
        console().print(f"{done.user_id}: {said}", highlight=False)
    for line in report.left_out:
        console().print(f"left out {line}", highlight=False)
    console().print(
        f"imported {len(report.imported)} user(s), skipped {len(report.skipped)}", highlight=False
    )


class _counter:
    """Records per second on standard error while the block runs, if it is a terminal."""

    def __init__(self, what: str, shown: bool) -> None:
        self.what = what
        self.shown = shown and sys.stderr.isatty()
        self.bar: Any = None

    def __enter__(self) -> Any:
        if not self.shown:
            return lambda _n: None
        from rich.console import Console
        from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        from ._progress import Rate

        columns = (
            SpinnerColumn(),
            TextColumn("{task.description} {task.completed} records"),
            Rate(),
            TimeElapsedColumn(),
        )
        self.bar = Progress(*columns, console=Console(stderr=True), transient=True)
        self.bar.start()
        task = self.bar.add_task(self.what, total=None)
        return lambda n: self.bar.advance(task, n)

    def __exit__(self, *_exc: object) -> None:
        if self.bar is not None:
            self.bar.stop()
