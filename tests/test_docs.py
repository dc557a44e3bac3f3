"""The examples of the README and of docs/ run as written (offline, on a scratch home),
and the commands they show exist, with the options they use."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
PAGES = [README, ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]


def blocks(language: str, page: Path) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", page.read_text(), flags=re.DOTALL)


BLOCKS = [block for page in PAGES for block in blocks("python", page)]
AGAIN = 3  # the first examples: the quick start, synchronous and asynchronous; the memory's
README_LINES = 250


def test_the_readme_is_a_landing_page_with_an_example_early() -> None:
    lines = README.read_text().splitlines()
    assert len(lines) <= README_LINES
    assert lines.index("```python") < 60  # a runnable example before line 60
    assert blocks("python", README) == BLOCKS[: len(blocks("python", README))]


def test_the_docs_have_examples() -> None:
    assert len(BLOCKS) >= 2
    # The synchronous quickstart: nothing closed, its own user (so what the async example
    # stored cannot answer for it).
    [sync] = [block for block in BLOCKS if "Runner.run_sync(" in block]
    assert "user-456" in sync and "aclose" not in sync


@pytest.mark.slow
@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_a_readme_example_runs_and_runs_again_alike(index: int) -> None:
    """Each example runs as written; the quick-start ones (the first :data:`AGAIN`, whose
    output is checked below) twice on one home, as a reader runs them again: the same
    output. (The others once: a run costs seconds, most of them importing the SDK.)"""
    block = BLOCKS[index]
    home = Path(tempfile.mkdtemp(prefix="mem01-readme-"))
    env = {k: v for k, v in os.environ.items() if k not in ("MEM01_DATABASE_URL", "DATABASE_URL")}
    env["MEM01_HOME"] = str(home)

    def cli(*args: str) -> None:
        proc = subprocess.run(
            [sys.executable, "-m", "mem01session", *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 0, proc.stderr

    # One embedded server for both runs (as `db start` keeps it for a reader's commands).
    cli("db", "start")
    try:
        runs = []
        for _ in range(2 if index < AGAIN else 1):
            proc = subprocess.run(
                [sys.executable, "-c", block],
                cwd=home,
                env=env,
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert proc.returncode == 0, block + proc.stderr[-3000:]
            assert "Error" not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
            # Its first run opens the memory (loads the model): never at its memory's cost.
            assert "without memory" not in proc.stderr, proc.stderr
            runs.append(proc.stdout)
    finally:
        cli("db", "stop")
        shutil.rmtree(home, ignore_errors=True)
    assert runs[0] == runs[-1], block
    output = runs[0]
    if index == 0:
        first = output.splitlines()
        assert first[0] == "You live in Lisbon."
        assert first[1] == "2"
    if "Any pets?" in block:
        assert output.splitlines() == ["['Has a cat named Miso']", "True ['ADD', 'CORRECT', 'ADD']"]
    if "Runner.run_sync(" in block:
        assert "You live in Porto" in output.splitlines()[0]


def _commands() -> list[list[str]]:
    """Every ``mem01session ...`` command of the shell blocks, split as the shell would."""
    found = []
    for page in PAGES:
        for block in blocks("bash", page):
            for line in block.replace("\\\n", " ").splitlines():
                lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
                lexer.whitespace_split = True
                command: list[str] = []
                for word in [*lexer, ";"]:
                    if word in ("&&", "|", "||", ";"):
                        while command and ("=" in command[0] or command[0] in ("nice", "-n")):
                            command.pop(0)
                            if command and command[0].isdigit():
                                command.pop(0)
                        if command and command[0] == "mem01session":
                            found.append(command[1:])
                        command = []
                    else:
                        command.append(word)
    return found


COMMANDS = _commands()


def test_the_docs_show_commands() -> None:
    assert len(COMMANDS) >= 8


@pytest.mark.parametrize("words", COMMANDS, ids=lambda w: " ".join(w)[:60])
def test_a_documented_command_exists_with_its_options(words: list[str]) -> None:
    """``mem01session a b --opt ...``: ``a b`` is a command and ``--opt`` one of its
    options (its ``--help`` names it)."""
    from typer.testing import CliRunner

    from mem01session.cli import app

    path = []
    for word in words:
        if word.startswith("-"):
            break
        path.append(word)
        result = CliRunner().invoke(app, [*path, "--help"])
        if result.exit_code != 0 or "Commands" not in result.output:
            break
    result = CliRunner().invoke(app, [*path, "--help"], terminal_width=200)
    assert result.exit_code == 0, (words, result.output)
    for option in (w.split("=")[0] for w in words if w.startswith("--")):
        assert option in result.output, (words, option)


def _frame_lines() -> set[str]:
    """Every fixed line the block is written with (its header, its sections' headings)."""
    from mem01session.engine.frame import HEADER, PENDING_HEADER
    from mem01session.engine.render import QUOTES_HEADER

    return {*HEADER.splitlines(), QUOTES_HEADER.strip(), PENDING_HEADER.strip()}


def _fenced(page: Path) -> list[str]:
    """The page's code blocks without a language, as written."""
    found: list[str] = []
    lines: list[str] | None = None
    opened = ""
    for line in page.read_text().splitlines():
        if line.startswith("```"):
            if lines is None:
                lines, opened = [], line
                continue
            if opened == "```":
                found.append("\n".join(lines))
            lines = None
        elif lines is not None:
            lines.append(line)
    return found


def test_a_block_shown_in_the_docs_is_written_as_the_library_writes_it() -> None:
    framed = _frame_lines()
    shown = [b for page in PAGES for b in _fenced(page) if "</memory>" in b]
    assert shown  # the concepts page shows some
    for block in shown:
        for line in block.splitlines():
            # A line that is neither a record, a quote nor a date is one of the frame's.
            if line and not line.startswith(("- ", "</memory>")) and not line[0].isdigit():
                assert line in framed, f"a block in the docs says {line!r}"


def test_a_code_fence_in_the_docs_is_never_empty() -> None:
    for page in PAGES:
        assert "```\n```" not in page.read_text(), page.name
