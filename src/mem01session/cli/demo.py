"""``mem01session demo``: the Monday/Wednesday/Friday scenario, with evidence."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ._console import console as _console
from ._errors import fail
from ._settings import load_settings

if TYPE_CHECKING:
    from ..demo import DemoReport


def show(report: DemoReport) -> None:
    """Print the report: one screen per day, the comparison, the evidence."""
    from rich.markup import escape
    from rich.panel import Panel
    from rich.table import Table
    from rich.text import Text

    console = _console()
    console.print(
        Panel.fit(
            "\n".join(f"[bold]{part}[/]: {escape(what)}" for part, what in report.offline.items()),
            title="what ran",
            subtitle=f"user {report.user_id}",
        )
    )
    for day, turns in report.day_turns.items():
        console.rule(f"[bold]{day}[/] {report.days.get(day, '')[:10]}")
        table = Table("user", "assistant", show_lines=True, expand=True)
        for said, answer in turns:
            table.add_row(escape(said), escape(answer))
        console.print(table)

    console.rule("[bold]Friday: the same question, three strategies")
    table = Table("strategy", "items", "tokens", "answer", show_lines=True, expand=True)
    for s in report.strategies:
        table.add_row(s.name, str(s.items), str(s.tokens), escape(s.answer))
    console.print(table)
    if report.block:
        console.print(
            Panel(
                Text(report.block),
                title=f"memory block ({report.block_tokens} of {report.block_budget} tokens)",
            )
        )

    console.rule("[bold]Evidence")
    table = Table("", "check", "observed", show_lines=True, expand=True)
    for c in report.checks:
        table.add_row("[green]PASS[/]" if c.passed else "[red]FAIL[/]", c.name, escape(c.detail))
    console.print(table)
    ledger = Table("op", "belief", "before", "after", title="ledger")
    for e in report.ledger:
        before = (e["before"] or {}).get("content", "") if isinstance(e["before"], dict) else ""
        after = (e["after"] or {}).get("content", "") if isinstance(e["after"], dict) else ""
        ledger.add_row(e["op"], f"#{e['belief_id']}", escape(str(before)), escape(str(after)))
    console.print(ledger)
    verdict = "[green]all checks passed[/]" if report.passed else "[red]some checks failed[/]"
    kept = (
        f"kept user {report.user_id} for inspection"
        if report.kept
        else "scratch user erased, no trace left"
    )
    console.print(f"{verdict} in {report.seconds:.1f} s; {kept}")


def check_writable(path: Path, option: str) -> None:
    """Refuse, before anything runs, a file path that could not be written at the end."""
    import os

    folder = path.parent if str(path.parent) else Path(".")
    if path.is_dir():
        fail(f"{option} {path}: is a folder; give a file path")
    if not folder.is_dir():
        fail(f"{option} {path}: the folder {folder} does not exist")
    if not os.access(folder, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        fail(f"{option} {path}: not writable")


def demo(
    check: Annotated[bool, typer.Option("--check", help="Exit 1 if any check fails.")] = False,
    json_path: Annotated[
        Path | None, typer.Option("--json", help="Write the evidence as JSON to PATH.")
    ] = None,
    keep: Annotated[
        bool, typer.Option("--keep", help="Keep the demo user's memory for inspection.")
    ] = False,
    model: Annotated[
        str | None,
        typer.Option(
            "--model",
            help="Model for answers and extraction (default MEM01_LLM_MODEL); with "
            "OPENAI_BASE_URL, a model that server serves.",
        ),
    ] = None,
) -> None:
    """Run the Monday/Wednesday/Friday demo.

    Offline without OPENAI_API_KEY; with it, on OpenAI or any OpenAI-compatible server
    (OPENAI_BASE_URL).

    Example: mem01session demo --check

    On a local server:
      OPENAI_API_KEY=any OPENAI_BASE_URL=http://127.0.0.1:11434/v1 mem01session demo --model gemma3
    """
    if json_path is not None:
        check_writable(json_path, "--json")
    import asyncio
    import dataclasses

    from ._server import database_url

    settings = load_settings()
    if model:
        settings = dataclasses.replace(settings, llm_model=model)
    # First, before the Agents SDK loads: the embedded server started (saying so), or the
    # configured one checked.
    database_url(settings)
    from ..demo import run_demo
    from ..demo.run import dump_json

    report = asyncio.run(run_demo(keep=keep, settings=settings))
    show(report)
    if json_path is not None:
        dump_json(report, json_path)
        _console().print(f"evidence written to {json_path}")
    if check and not report.passed:
        raise typer.Exit(1)
