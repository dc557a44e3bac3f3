"""Help that reads well at 80 columns (the width a pipe gets): paragraphs wrap at the
terminal's edge instead of the source's, flags show no type, and ``--version`` answers."""

from __future__ import annotations

import re
from collections.abc import Iterator
from importlib.metadata import version
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from mem01session.cli import app
from mem01session.cli._help import TidyCommand, TidyGroup, reflow

runner = CliRunner()


def commands(command: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    yield path, command
    for name, sub in getattr(command, "commands", {}).items():
        yield from commands(sub, (*path, name))


TREE = list(commands(typer.main.get_command(app)))


def help_of(path: tuple[str, ...]) -> str:
    result = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "80"}, terminal_width=80)
    assert result.exit_code == 0, result.output
    return result.output


def test_every_command_is_made_tidy() -> None:
    assert len(TREE) > 20
    for path, command in TREE:
        assert isinstance(command, TidyGroup | TidyCommand), path


@pytest.mark.parametrize("path", [p for p, _ in TREE], ids=lambda p: " ".join(p) or "root")
def test_help_fits_80_columns_without_ragged_lines_or_bool_types(path: tuple[str, ...]) -> None:
    out = help_of(path)
    assert "<bool>" not in out
    assert max(len(line) for line in out.splitlines()) <= 80
    # Every docstring paragraph is one line before the terminal wraps it (examples and
    # indented commands excepted).
    command = dict(TREE)[path]
    for paragraph in (command.help or "").split("\n\n"):
        lines = paragraph.splitlines()
        assert all(line.startswith((" ", "Example")) for line in lines[1:]), paragraph


def test_a_long_first_paragraph_is_wrapped_by_the_terminal_not_the_source() -> None:
    out = help_of(())
    erase = next(i for i, line in enumerate(out.splitlines()) if "│ erase " in line)
    listing = " ".join(out.splitlines()[erase : erase + 2])
    assert "print the receipt." in " ".join(re.sub(r"[│]", " ", listing).split())


def test_reflow_joins_paragraph_lines_and_keeps_examples_and_indented_lines() -> None:
    text = """First line
    goes on here.

    Second paragraph,
    wrapped twice,
    in the source.

    Example: mem01session demo --check

    On a server:
      OPENAI_BASE_URL=http://x mem01session demo
    """
    assert reflow(text) == (
        "First line goes on here.\n\n"
        "Second paragraph, wrapped twice, in the source.\n\n"
        "Example: mem01session demo --check\n\n"
        "On a server:\n  OPENAI_BASE_URL=http://x mem01session demo"
    )
    assert reflow(None) is None and reflow("") == ""


def test_version() -> None:
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.output == f"mem01session {version('mem01session')}\n"
