"""``erase --transcripts`` after ``demo --keep``: no file under MEM01_HOME but PostgreSQL's
write-ahead log keeps the user's words (the files searched as ``bench.erase_residue``
searches the server's)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from mem01session.demo.run import SCRIPT


def _holding(home: Path, words: list[bytes]) -> dict[str, list[str]]:
    """Files under ``home`` holding any of ``words``, and which."""
    found: dict[str, list[str]] = {}
    for path in home.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            hits = [w.decode() for w in words if w in data]
            if hits:
                found[path.relative_to(home).as_posix()] = hits
    return found


@pytest.mark.slow
def test_an_erase_with_its_transcripts_leaves_the_words_only_in_postgres_wal() -> None:
    home = Path(tempfile.mkdtemp(prefix="mem01-erase-home-"))
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("MEM01_DATABASE_URL", "DATABASE_URL", "OPENAI_API_KEY", "MEM01_EMBEDDING_DIM")
    }
    env["MEM01_HOME"] = str(home)

    def cli(*args: str) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "mem01session", *args],
            env=env, capture_output=True, text=True, timeout=180,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        return done.stdout

    words = [t.encode() for day in ("Monday", "Wednesday") for t in SCRIPT[day]]
    words = [w for w in words if len(w) > 30]  # the sentences only this user said
    try:
        cli("demo", "--keep")
        [user] = [u["user_id"] for u in json.loads(cli("users", "--json"))]
        before = _holding(home, words)
        assert any(p.startswith("demo-transcripts.sqlite") for p in before), before
        said = cli("erase", "--user", user, "--yes", "--compact", "--transcripts")
        assert "message(s) of 3 conversation(s) deleted from" in said, said
        after = _holding(home, words)
        assert all("/pg_wal/" in f"/{p}" for p in after), after
    finally:
        shutil.rmtree(home, ignore_errors=True)
