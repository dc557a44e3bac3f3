"""With nothing configured the CLI starts the embedded server under MEM01_HOME."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from mem01session.db import migrate


@pytest.fixture
def home() -> Iterator[Path]:
    folder = Path(tempfile.mkdtemp(prefix="mem01-home-"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _cli(home: Path, *args: str) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("MEM01_DATABASE_URL", "DATABASE_URL")}
    env["MEM01_HOME"] = str(home)
    return subprocess.Popen(
        [sys.executable, "-m", "mem01session", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_two_processes_start_and_migrate_one_embedded_server(home: Path) -> None:
    procs = [_cli(home, "db", "upgrade") for _ in range(2)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs

    current = _cli(home, "db", "current")
    out, err = current.communicate(timeout=120)
    assert current.returncode == 0, err
    assert out.strip() == f"{migrate.head_revision()} (head)"
    assert (home / "pg" / "PG_VERSION").is_file()
    # The process that started the server stopped it at exit.
    assert not (home / "pg" / "postmaster.pid").exists()
