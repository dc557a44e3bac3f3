"""``mem01session export`` and ``import`` on real databases, and an import killed midway."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
import pytest

from mem01session.embeddings import HashingEmbedder
from tests.child_env import pythonpath, wait_for
from tests.cli.test_inspector import ALICE, Seeded, env, failed, ok, seeded
from tests.conftest import TEST_DIM
from tests.pg import create_database, drop_database, with_database

__all__ = ["env", "seeded"]
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def other_db(pg_admin_url: str, template_db: str) -> Iterator[str]:
    name = create_database(pg_admin_url, template=template_db)
    yield with_database(pg_admin_url, name)
    drop_database(pg_admin_url, name)


def test_export_writes_a_document_and_import_brings_it_in_once(
    seeded: Seeded, other_db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "alice.jsonl"
    assert ok("export", "--user", ALICE, "-o", str(target)).strip() == (
        f"wrote 9 lines to {target}"
    )
    lines = [json.loads(line) for line in target.read_text().splitlines()]
    assert [r["kind"] for r in lines].count("belief") == 3
    assert not list(tmp_path.glob("*.part"))
    assert ok("export", "-u", ALICE).splitlines()[1:] == target.read_text().splitlines()[1:]

    monkeypatch.setenv("MEM01_DATABASE_URL", other_db)
    said = ok("import", str(target))
    assert said.splitlines() == [
        "alice: 3 beliefs, 0 episodes, 3 ledger events",
        "imported 1 user(s), skipped 0",
    ]
    assert ok("import", str(target)).splitlines() == [
        "alice: already imported from this document: unchanged",
        "imported 0 user(s), skipped 1",
    ]
    assert "Lives in San Francisco" in ok("recall", "--user", ALICE, "where do I live?")


def test_bad_requests_fail_in_one_line(seeded: Seeded, tmp_path: Path) -> None:
    assert failed("export") == "error: name the users to export (--user U) or pass --all"
    assert failed("export", "--all", "-u", ALICE) == "error: --user and --all exclude each other"
    assert failed("export", "-u", "nobody") == "error: no memory of user 'nobody' here"
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"kind": "header", "format": "mem01session", "version": 1}\n{"kind": 3}\n')
    assert failed("import", str(bad)) == (
        "error: line 2: kind must be one of header, user, episode, belief, event, transcript, end; "
        "got 3"
    )
    assert failed("import", str(tmp_path / "none.jsonl")).endswith("none.jsonl: no such file")
    assert failed("import", str(bad), "--from", "zep") == (
        "error: --from must be mem01session or mem0, got 'zep'"
    )


def _document(path: Path, users: int, beliefs: int) -> None:
    """A document of ``users`` users with ``beliefs`` beliefs (and their ADDs) each."""
    at = datetime(2026, 1, 5, 9, tzinfo=UTC)
    with path.open("w") as out:
        head = {"kind": "header", "format": "mem01session", "version": 1, "source": "test"}
        out.write(json.dumps(head) + "\n")
        for u in range(users):
            user = f"user-{u:04d}"
            out.write(json.dumps({"kind": "user", "user": user}) + "\n")
            for b in range(1, beliefs + 1):
                when = (at + timedelta(minutes=b)).isoformat()
                belief = {"kind": "belief", "user": user, "ref": b, "status": "active"}
                belief |= {"content": f"Fact number {b} about {user}", "valid_from": when}
                out.write(json.dumps(belief) + "\n")
            for b in range(1, beliefs + 1):
                event = {"kind": "event", "user": user, "op": "ADD", "belief": b}
                event |= {"created_at": (at + timedelta(minutes=b)).isoformat()}
                out.write(json.dumps(event) + "\n")
        out.write(json.dumps({"kind": "end", "users": users, "records": users * (1 + 2 * beliefs)}))


def _counts(url: str) -> tuple[int, dict[str, int]]:
    with psycopg.connect(url, autocommit=True) as conn:
        imports = conn.execute("SELECT count(*) FROM belief_events WHERE op = 'IMPORT'").fetchone()
        rows = conn.execute("SELECT user_id, count(*) FROM beliefs GROUP BY user_id").fetchall()
    assert imports is not None
    return int(imports[0]), {str(u): int(n) for u, n in rows}


@pytest.mark.slow
def test_an_import_killed_midway_and_run_again_writes_every_user_exactly_once(
    other_db: str, tmp_path: Path
) -> None:
    users, beliefs = 120, 40
    document = tmp_path / "many.jsonl"
    _document(document, users, beliefs)
    child_env = dict(os.environ)
    child_env |= {
        "MEM01_DATABASE_URL": other_db,
        "MEM01_EMBEDDING_MODEL": HashingEmbedder(TEST_DIM).name,
        "PYTHONPATH": pythonpath(ROOT),
    }
    command = [sys.executable, "-m", "mem01session", "import", str(document)]
    child = subprocess.Popen(command, env=child_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        wait_for(lambda: _counts(other_db)[0] >= 3, child)  # some users written
    finally:
        child.send_signal(signal.SIGKILL)
        child.communicate()
    imported, held = _counts(other_db)
    assert 3 <= imported < users, "killed midway"
    assert len(held) == imported and set(held.values()) == {beliefs}  # whole users only

    again = subprocess.run(command, env=child_env, capture_output=True, text=True, check=True)
    assert (
        again.stdout.splitlines()[-1] == f"imported {users - imported} user(s), skipped {imported}"
    )
    imported, held = _counts(other_db)
    assert imported == users and len(held) == users and set(held.values()) == {beliefs}
