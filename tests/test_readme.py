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


@pytest.mark.slow
def test_readme_examples_run_and_run_again_alike() -> None:
    blocks = python_blocks()
    assert len(blocks) >= 2
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

    # One embedded server for every run (as `db start` keeps it for a reader's commands),
    # rather than one started and stopped by each of them.
    cli("db", "start")
    try:
        outputs = []
        for block in blocks:
            runs = []
            for _ in range(2):  # the same output the second time, on the same home
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
                runs.append(proc.stdout)
            assert runs[0] == runs[1], block
            outputs.append(runs[0])
    finally:
        cli("db", "stop")
        shutil.rmtree(home, ignore_errors=True)
    first = outputs[0].splitlines()
    assert first[0] == "From what I was shown: Lives in Lisbon (current)."
    assert first[1] == "2"
    [pets] = [i for i, block in enumerate(blocks) if "Any pets?" in block]
    assert outputs[pets].strip() == "['Has a cat named Miso']"
    # The synchronous quickstart: two scripted-style runs, nothing closed, its own user (so
    # what the async example stored cannot answer for it).
    [sync] = [i for i, block in enumerate(blocks) if "Runner.run_sync(" in block]
    assert "user-456" in blocks[sync] and "aclose" not in blocks[sync]
    assert "Lives in Porto" in outputs[sync].splitlines()[0]
