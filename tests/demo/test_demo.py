"""`mem01session demo --check` on a fresh home with nothing configured (offline)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest


@pytest.mark.slow
def test_demo_check_passes_offline_on_a_fresh_home() -> None:
    home = Path(tempfile.mkdtemp(prefix="mem01-demo-home-"))
    out = home / "evidence.json"
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("MEM01_DATABASE_URL", "DATABASE_URL", "OPENAI_API_KEY", "MEM01_EMBEDDING_DIM")
    }
    env["MEM01_HOME"] = str(home)
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "mem01session", "demo", "--check", "--json", str(out)],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        evidence = json.loads(out.read_text())
        # The scratch user leaves nothing behind, not even an erased user in the list.
        users = subprocess.run(
            [sys.executable, "-m", "mem01session", "users", "--json"],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert users.returncode == 0, users.stderr
        assert json.loads(users.stdout) == []
    finally:
        shutil.rmtree(home, ignore_errors=True)

    assert evidence["passed"] is True
    assert all(check["passed"] for check in evidence["checks"])
    assert "offline" in evidence["offline"]["answers"]
    assert evidence["offline"]["extraction"].startswith("rules")
    fresh, replay, memory = evidence["strategies"]
    # The block rides in front of the user's message: one item, as fresh.
    assert fresh["items"] == memory["items"] == 1 and replay["items"] > 1
    assert "San Francisco" in memory["answer"] and "2,400" in memory["answer"]
    assert "San Francisco" not in fresh["answer"]
    assert "all checks passed" in proc.stdout
    assert "scratch user erased, no trace left" in proc.stdout
    # A fresh home: the embedded server is started, and the command says so first.
    assert proc.stderr.startswith("starting the embedded PostgreSQL in "), proc.stderr

    # The dates agree with the story: New York from Monday until the move (Tuesday, "I
    # moved yesterday" said on Wednesday), San Francisco from then on, the New York rent
    # retired at the move and still reaching Friday as Monday's words.
    passed = {c["name"]: c["detail"] for c in evidence["checks"] if c["passed"]}
    dates = passed["dates: New York from Monday until the move, San Francisco from the move on"]
    assert dates == "New York valid 2026-11-23 to 2026-11-24; San Francisco valid 2026-11-24 to now"
    rent = passed["the New York rent: retired at the move, not current beside San Francisco"]
    assert "invalidated valid 2026-11-23 to 2026-11-24 (moved" in rent
    said = passed["Friday's block still carries the rent: Monday's words, with their date"]
    assert "(under 23 Nov 2026)" in said
