"""How the inspector commands open the database (cli/_reads.py).

They call the engine's own reads (``engine.inspection``, ``queue.job_records.list_jobs``)
on a direct pool. At the head revision that pool is opened on its own, without SQLAlchemy
(the fast path); otherwise the database is opened as every other command opens it (the
fallback: migrated, or refused with the usual errors) and the same reads run on its pool.
Both paths must print the same thing.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Awaitable, Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import mem01session
import mem01session.memory.reader as reader_module
from mem01session.cli import _reads, app
from mem01session.db import Database
from mem01session.embeddings import HashingEmbedder
from mem01session.engine import BeliefEngine, Utterance
from mem01session.engine.ops import Op, Provenance
from mem01session.queue import JobStore, TurnMessage
from tests.conftest import TEST_DIM

MONDAY = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
WEDNESDAY = MONDAY + timedelta(days=2)


async def _seed(url: str) -> dict[str, int]:
    """alice (current, superseded and forgotten beliefs, episodes, a failed job), bob,
    carol (erased) and dave (a pending job only)."""
    embedder = HashingEmbedder(TEST_DIM)
    async with await Database.open(
        url, embedding_model=embedder.name, embedding_dim=embedder.dim
    ) as db:
        engine = BeliefEngine(db, embedder)
        monday = Provenance(session_id="c-monday", observed_at=MONDAY, job_id=1, extractor="t")
        r1 = await engine.apply(
            "alice",
            [
                Op.add("Lives in New York City", key="home", evidence="I live in New York City"),
                Op.add("Pays $2,400 a month in rent", evidence="I pay $2,400 a month"),
            ],
            provenance=monday,
            utterances=[Utterance(0, "user", "I live in New York City and pay $2,400 a month.")],
        )
        nyc, rent = (c.belief_id for c in r1.changes)
        wednesday = Provenance(
            session_id="c-wednesday", observed_at=WEDNESDAY, job_id=2, extractor="t"
        )
        r2 = await engine.apply(
            "alice",
            [Op.supersede(nyc, "Lives in San Francisco", evidence="I moved", reason="moved")],
            provenance=wednesday,
            utterances=[Utterance(0, "user", "I moved to San Francisco.")],
        )
        await engine.forget("alice", rent, "no longer true")
        bob = await engine.apply("bob", [Op.add("Likes green tea")], provenance=Provenance("c-b"))
        await engine.apply("carol", [Op.add("Plays chess")], provenance=Provenance("c-c"))
        await engine.erase_user("carol")
        store = JobStore(db)
        await store.enqueue("alice", "c-friday", [TurnMessage("user", "hi")], now=WEDNESDAY)
        [job] = await store.claim("w1", now=WEDNESDAY, lease=timedelta(minutes=1))
        await store.fail(job, "w1", "extractor exploded", now=WEDNESDAY, retry_at=None)
        await store.enqueue("dave", "c-dave", [TurnMessage("user", "hello")], now=WEDNESDAY)
        return {"sf": r2.changes[0].belief_id, "rent": rent, "bob": bob.changes[0].belief_id}


@pytest.fixture
def seeded(db_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, int]]:
    monkeypatch.setenv("MEM01_DATABASE_URL", db_url)
    monkeypatch.setenv("MEM01_EMBEDDING_MODEL", HashingEmbedder(TEST_DIM).name)
    monkeypatch.setenv("COLUMNS", "250")  # wide tables: no wrapped cells in assertions
    yield asyncio.run(_seed(db_url))


def _commands(ids: dict[str, int]) -> list[list[str]]:
    sf, rent, bob = str(ids["sf"]), str(ids["rent"]), str(ids["bob"])
    return [
        ["beliefs", "list", "--user", "alice"],
        ["beliefs", "list", "--user", "alice", "--all", "--json"],
        ["beliefs", "list", "--user", "dave"],  # a job, no beliefs yet
        ["beliefs", "show", sf, "--user", "alice"],
        ["beliefs", "show", rent, "--user", "alice"],
        ["beliefs", "show", bob, "--user", "alice"],  # another user's belief: unknown
        ["beliefs", "show", "999999", "--user", "alice"],
        ["beliefs", "history", "--user", "alice"],
        ["beliefs", "list", "--user", "nobody"],  # unknown user: refused
        ["episodes", "list", "--user", "alice", "--json"],
        ["episodes", "list", "--user", "alice", "--conversation", "c-wednesday"],
        ["episodes", "list", "--user", "alice", "--contains", "SAN"],
        ["users"],
        ["users", "--contains", "a", "--json"],
        ["jobs", "list"],
        ["jobs", "list", "--failed"],
        ["jobs", "list", "--user", "dave"],
        ["jobs", "list", "--user", "nobody"],
    ]


def _run(args: list[str]) -> tuple[int, str]:
    result = CliRunner().invoke(app, args)
    return result.exit_code, result.output


def test_the_fast_path_and_the_fallback_print_the_same(
    seeded: dict[str, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    opened = _reads._opened
    fallbacks: list[None] = []

    async def counted(work: Callable[[Any], Awaitable[Any]], *args: Any) -> Any:
        fallbacks.append(None)
        return await opened(work, *args)

    monkeypatch.setattr(_reads, "_opened", counted)
    commands = _commands(seeded)
    fast = [_run(args) for args in commands]
    assert fallbacks == [], "a database at head is read without opening it the usual way"

    async def not_at_head(pool: Any) -> bool:
        return False

    monkeypatch.setattr(reader_module, "_at_head", not_at_head)
    slow = [_run(args) for args in commands]
    assert len(fallbacks) == len(commands)
    for args, one, other in zip(commands, fast, slow, strict=True):
        assert one == other, args
    # Not vacuous: the commands found the seeded memory, and refused what they should.
    said = {" ".join(args): result for args, result in zip(commands, fast, strict=True)}
    refused = {what for what, (code, _) in said.items() if code != 0}
    assert refused == {
        f"beliefs show {seeded['bob']} --user alice",
        "beliefs show 999999 --user alice",
        "beliefs list --user nobody",
        "jobs list --user nobody",
    }
    listed = json.loads(said["beliefs list --user alice --all --json"][1])
    assert {b["status"] for b in listed} == {"active", "superseded", "invalidated"}
    assert "extractor exploded" in said["jobs list --failed"][1]
    assert "carol" in said["users"][1] and "dave" in said["jobs list"][1]


def test_a_database_not_at_head_is_refused_as_before(
    empty_db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An external database the fast path cannot use (here: empty) is opened the usual
    way, which refuses it with the usual error."""
    monkeypatch.setenv("MEM01_DATABASE_URL", empty_db_url)
    monkeypatch.setenv("MEM01_EMBEDDING_MODEL", HashingEmbedder(TEST_DIM).name)
    for args in (["beliefs", "list", "--user", "alice"], ["users"], ["jobs", "list"]):
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 1, result.output
        assert "the database is empty but this library needs revision" in result.output
        assert "mem01session db upgrade" in result.output


@pytest.mark.slow
def test_the_shared_reads_import_no_sqlalchemy() -> None:
    """The engine's inspection reads, the job listing and the CLI's opening load neither
    SQLAlchemy nor NumPy (the CLI calls the engine's reads, not copies of them), nor the
    rule extractor's patterns and the secret rules (a job's types come from
    extraction.base)."""
    code = (
        "import sys\n"
        "import mem01session.engine.inspection, mem01session.queue.job_records\n"
        "import mem01session.cli._reads, mem01session.memory.reader\n"
        "heavy = {'sqlalchemy', 'numpy', 'mem01session.extraction.rules.extractor', "
        "'mem01session.secrets.rules'}\n"
        "print(sorted(m for m in sys.modules if m in heavy or m.split('.')[0] in heavy))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(mem01session.__file__).parents[1])}
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"
