"""The README's Python examples run as written (offline, on a scratch home)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.DOTALL)


BLOCKS = python_blocks()
AGAIN = 3  # the first examples: the quick start, synchronous and asynchronous


def test_the_readme_has_examples() -> None:
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
        assert output.strip() == "['Has a cat named Miso']"
    if "Runner.run_sync(" in block:
        assert "You live in Porto" in output.splitlines()[0]
