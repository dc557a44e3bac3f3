"""The inspector commands' reads (cli/_reads.py, plain psycopg) give what the engine's
give: the same records, in the same order, with the same checks and errors.

They are the engine's statements written a second time (see that module's docstring);
this is what keeps the two copies the same.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from typer.testing import CliRunner

from mem01session.cli import app
from mem01session.cli._reads import Reader
from mem01session.db import Database
from mem01session.embeddings import HashingEmbedder
from mem01session.engine import BeliefEngine, Utterance
from mem01session.engine.ops import Op, Provenance
from mem01session.queue import JobStore
from mem01session.queue.turns import TurnMessage
from tests.conftest import TEST_DIM

MONDAY = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
WEDNESDAY = MONDAY + timedelta(days=2)


async def _seed(engine: BeliefEngine) -> dict[str, int]:
    monday = Provenance(session_id="c-monday", observed_at=MONDAY, job_id=1, extractor="test")
    r1 = await engine.apply(
        "alice",
        [
            Op.add("Lives in New York City", key="home", evidence="I live in New York City"),
            Op.add("Pays $2,400 a month in rent", evidence="I pay $2,400 a month"),
            Op.add("Has a dog named Rex", evidence="my dog Rex"),
        ],
        provenance=monday,
        utterances=[
            Utterance(0, "user", "I live in New York City and pay $2,400 a month."),
            Utterance(1, "assistant", "Noted."),
        ],
    )
    nyc, rent, rex = (c.belief_id for c in r1.changes)
    wednesday = Provenance(
        session_id="c-wednesday", observed_at=WEDNESDAY, job_id=2, extractor="test"
    )
    r2 = await engine.apply(
        "alice",
        [Op.supersede(nyc, "Lives in San Francisco", evidence="I moved", reason="moved")],
        provenance=wednesday,
        utterances=[Utterance(0, "user", "I moved to San Francisco.")],
    )
    await engine.forget("alice", rent, "no longer true")
    await engine.apply("bob", [Op.add("Likes green tea")], provenance=Provenance("c-bob"))
    await engine.apply("carol", [Op.add("Plays chess")], provenance=Provenance("c-carol"))
    await engine.erase_user("carol")
    store = JobStore(engine.db)
    failed = await store.enqueue("alice", "c-friday", [TurnMessage("user", "hi")], now=WEDNESDAY)
    [job] = await store.claim("w1", now=WEDNESDAY, lease=timedelta(minutes=1))
    await store.fail(job, "w1", "extractor exploded", now=WEDNESDAY, retry_at=None)
    await store.enqueue("dave", "c-dave", [TurnMessage("user", "hello")], now=WEDNESDAY)
    return {"nyc": nyc, "rent": rent, "rex": rex, "sf": r2.changes[0].belief_id, "job": failed}


Call = Callable[[Any], Awaitable[Any]]


def _calls(ids: dict[str, int], episode_ids: list[int]) -> list[tuple[str, Call, Call]]:
    """(what, the engine's read, the reader's read) pairs over every method and option."""
    calls: list[tuple[str, Call, Call]] = []

    def both(what: str, method: str, *args: Any, **kwargs: Any) -> None:
        calls.append(
            (
                what,
                lambda e: getattr(e, method)(*args, **kwargs),
                lambda r: getattr(r, method)(*args, **kwargs),
            )
        )

    for user in ("alice", "bob", "carol", "dave", "nobody"):
        both(f"version {user}", "user_version", user)
        both(f"history {user}", "history", user)
        both(f"current {user}", "history", user, include_inactive=False)
        both(f"ledger {user}", "ledger", user)
        both(f"episodes {user}", "episodes", user)
    both("history limit", "history", "alice", limit=2)
    both("history contains", "history", "alice", contains="LIVES")
    both("history contains nothing", "history", "alice", contains="zebra")
    both("ledger limit", "ledger", "alice", limit=1)
    for name, belief in ids.items():
        if name != "job":
            both(f"ledger of {name}", "ledger", "alice", belief_id=belief)
            both(f"get {name}", "get", "alice", belief)
            both(f"get {name} as bob", "get", "bob", belief)
    for bad in (0, -1, 2**63, True, "1"):
        both(f"get {bad!r}", "get", "alice", bad)
        both(f"episode {bad!r}", "episode", "alice", bad)
    both("episodes of a conversation", "episodes", "alice", session_id="c-wednesday")
    both("episodes contains", "episodes", "alice", contains="san francisco")
    both("episodes limit", "episodes", "alice", limit=1)
    for episode in episode_ids:
        both(f"episode {episode}", "episode", "alice", episode)
        both(f"episode {episode} as bob", "episode", "bob", episode)
    both("users", "users")
    both("users contains", "users", contains="A")
    both("users limit", "users", limit=1)
    both("bad user id", "history", "")
    both("bad limit", "history", "alice", limit=0)
    both("bad filter", "users", contains="")
    return calls


def _jobs_calls() -> list[tuple[str, dict[str, Any]]]:
    return [
        ("all jobs", {}),
        ("alice's jobs", {"user_id": "alice"}),
        ("failed jobs", {"status": "failed"}),
        ("alice's failed jobs", {"user_id": "alice", "status": "failed"}),
        ("one job", {"limit": 1}),
        ("nobody's jobs", {"user_id": "nobody"}),
    ]


async def _outcome(read: Awaitable[Any]) -> Any:
    try:
        return ("value", await read)
    except Exception as exc:
        return ("error", type(exc), str(exc))


async def test_the_reader_reads_what_the_engine_reads(db: Database) -> None:
    engine = BeliefEngine(db, HashingEmbedder(TEST_DIM))
    ids = await _seed(engine)
    episode_ids = [e.id for e in await engine.episodes("alice")]
    assert len(episode_ids) >= 2
    reader = Reader(db.direct)
    for what, by_engine, by_reader in _calls(ids, [*episode_ids, max(episode_ids) + 1]):
        expected = await _outcome(by_engine(engine))
        assert await _outcome(by_reader(reader)) == expected, what
    store = JobStore(db)
    for what, kwargs in _jobs_calls():
        expected = await _outcome(store.list_jobs(**kwargs))
        assert await _outcome(reader.list_jobs(**kwargs)) == expected, what
    # Not vacuous: the seeded memory is there, in every shape.
    statuses = {b.status for b in await reader.history("alice")}
    assert statuses == {"active", "superseded", "invalidated"}
    assert (await reader.users(contains="carol"))[0].erased_at is not None
    assert {j.status for j in await reader.list_jobs()} == {"failed", "pending"}
    assert any(e.belief_ids for e in await reader.episodes("alice"))


def test_a_database_not_at_head_is_refused_as_before(
    empty_db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An external database the reader cannot use (here: empty) is opened the usual way,
    which refuses it with the usual error."""
    monkeypatch.setenv("MEM01_DATABASE_URL", empty_db_url)
    monkeypatch.setenv("MEM01_EMBEDDING_MODEL", HashingEmbedder(TEST_DIM).name)
    for args in (["beliefs", "list", "--user", "alice"], ["users"], ["jobs", "list"]):
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 1, result.output
        assert "the database is empty but this library needs revision" in result.output
        assert "mem01session db upgrade" in result.output
