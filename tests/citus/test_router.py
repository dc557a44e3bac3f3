"""Every per-run statement for one user is a router query: one task, on the worker that
holds the user's shards (``EXPLAIN``, ``Task Count: 1``).

The statements are the library's own: captured while it recalls (every scope and kind,
with and without the job queue's barrier probe; beliefs and episodes), enqueues a turn and
claims a job, then explained with the same parameters.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace
from datetime import timedelta
from typing import Any

import psycopg
import pytest

from mem01session.db import Database
from mem01session.embeddings import HashingEmbedder
from mem01session.engine import BeliefEngine, RecallRequest, Utterance, episode_candidates
from mem01session.engine.ops import Op, Provenance
from mem01session.queue import JobStore
from mem01session.queue.progress import progress_probe, run_probe
from mem01session.queue.turns import TurnMessage
from tests.citus.cluster import SHARDS, require_cluster
from tests.engine.conftest import START, TickingClock

require_cluster()
pytestmark = pytest.mark.citus

Captured = list[tuple[str, dict[str, Any]]]


@contextmanager
def captured(db: Database) -> Iterator[Captured]:
    """The statements (and parameters) sent on the direct pool, the per-run path."""
    seen: Captured = []
    originals = {name: getattr(db.direct, name) for name in ("fetch", "fetch_tuples")}

    def capturing(original: Any) -> Any:
        async def run(query: Any, params: Mapping[str, Any], **options: Any) -> Any:
            seen.append((str(query), dict(params)))
            return await original(query, params, **options)

        return run

    for name, original in originals.items():
        setattr(db.direct, name, capturing(original))
    try:
        yield seen
    finally:
        for name, original in originals.items():
            setattr(db.direct, name, original)


def explain(url: str, query: str, params: dict[str, Any]) -> list[str]:
    """The plan, the parameters bound as literals (as the custom plan of a run sees them)."""
    with psycopg.connect(url, autocommit=True) as conn:
        cursor = psycopg.ClientCursor(conn)
        return [str(r[0]) for r in cursor.execute("EXPLAIN (COSTS OFF) " + query, params)]


def worker_of(url: str, user_id: str) -> str:
    """``host=... port=...`` of the worker holding the user's shard group."""
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT nodename, nodeport FROM citus_shards WHERE table_name = 'beliefs'::regclass "
            "AND shardid = get_shard_id_for_distribution_column('beliefs', CAST(%s AS text))",
            (user_id,),
        ).fetchone()
    assert row is not None
    return f"host={row[0]} port={row[1]}"


def assert_routed(url: str, query: str, params: dict[str, Any], worker: str) -> None:
    plan = explain(url, query, params)
    text = "\n".join(plan)
    tasks = [line.strip() for line in plan if "Task Count:" in line]
    nodes = {line.split("Node: ", 1)[1].split(" dbname")[0] for line in plan if "Node: " in line}
    assert tasks == ["Task Count: 1"], text
    assert "Distributed Subplan" not in text, text
    assert nodes == {worker}, text


async def seed(engine: BeliefEngine, user: str) -> None:
    prov = Provenance(session_id="s1", extractor="test")
    result = await engine.apply(
        user,
        [Op.add("Lives in Lisbon", key="home.city"), Op.add("Has a cat named Miso")],
        provenance=replace(prov, job_id=1),
        utterances=[Utterance(0, "user", "I live in Lisbon. My cat is called Miso.")],
    )
    await engine.apply(
        user, [Op.supersede(result.changes[0].belief_id, "Lives in Porto")], provenance=prov
    )


# Requests with a query read episodes too, in a statement of their own.
QUOTING = ("hybrid", "vector", "history", "as_of", "named_days")
REQUESTS = {
    "hybrid": RecallRequest("where do I live?"),
    "vector": RecallRequest("?!"),  # no word for full text: vectors only
    "recent": RecallRequest(""),
    "history": RecallRequest("where do I live?", include_history=True),
    "as_of": RecallRequest("where do I live?", as_of=START + timedelta(days=1)),
    "as_of_history": RecallRequest("", include_history=True, as_of=START + timedelta(days=1)),
    # Naming days adds a third list of episodes: those said then.
    "named_days": RecallRequest(f"where did I live on {START:%B} {START.day}?"),
}


async def test_recall_of_one_user_runs_on_one_worker(
    db: Database, db_url: str, embedder: HashingEmbedder
) -> None:
    engine = BeliefEngine(db, embedder, clock=TickingClock())
    users = [f"router-{i}" for i in range(6)]
    for user in users:
        await seed(engine, user)
    workers = {user: worker_of(db_url, user) for user in users}
    assert len(set(workers.values())) == 2  # the users live on both workers
    for user in users:
        jobs = JobStore(db)
        job = await jobs.enqueue(user, "s1", [TurnMessage("user", "I moved")], now=engine.clock())
        with captured(db) as seen:
            for request in REQUESTS.values():
                result = await engine.recall(user, request)
                assert result.candidates > 0
                await engine.recall_probed(user, request, progress_probe([job]))
                # A run's probe: also the words of the user's queued turns, on that worker.
                _, progress = await engine.recall_probed(user, request, run_probe([job], set(), 3))
                assert progress.said == ("I moved",) and progress.unfinished == {job}
        # Each request: its belief statement; a quoting one, also the episode statement; and
        # once for the user (how their vectors are read), their episode count.
        assert len(seen) == 3 * (len(REQUESTS) + len(QUOTING)) + 1
        assert sum(query == episode_candidates.COUNT_SQL for query, _ in seen) == 1
        assert sum("FROM episodes" in query for query, _ in seen) == 3 * len(QUOTING)
        assert sum("day AS MATERIALIZED" in query for query, _ in seen) == 3  # named_days
        for query, params in seen:
            assert_routed(db_url, query, params, workers[user])


async def test_enqueue_and_claim_of_one_user_run_on_one_worker(db: Database, db_url: str) -> None:
    store = JobStore(db)
    user = "router-jobs"
    worker = worker_of(db_url, user)
    clock = TickingClock()
    with captured(db) as seen:
        await store.enqueue(user, "s1", [TurnMessage("user", "hello")], now=clock())
    assert len(seen) == 2  # is the user erased? then the insert
    for query, params in seen:
        assert_routed(db_url, query, params, worker)

    with captured(db) as seen:
        [job] = await store.claim("w1", now=clock(), lease=timedelta(minutes=1))
    assert job.user_id == user
    (find, find_params), (claim, claim_params) = seen
    assert_routed(db_url, claim, claim_params, worker)
    # Finding users with work is the one statement that asks every shard (no locks).
    plan = "\n".join(explain(db_url, find, find_params))
    assert f"Task Count: {SHARDS}" in plan and "FOR UPDATE" not in find


async def test_a_lifetime_users_question_naming_days_runs_on_one_worker(
    db: Database, db_url: str, embedder: HashingEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """For a user past the exact bound, the days a question names are read by their bits,
    on the user's worker alone, and what was said that day is found."""
    engine = BeliefEngine(db, embedder, clock=TickingClock())
    user = "router-lifetime"
    await seed(engine, user)
    monkeypatch.setattr(episode_candidates, "EXACT_UP_TO", 0)
    request = replace(REQUESTS["named_days"], kinds="episodes", explain=True)
    await engine.recall(user, request)  # the user's count, read once
    with captured(db) as seen:
        result = await engine.recall(user, request)
    assert [e.signals["day_rank"] for e in result.episodes] == [1.0]
    [days] = [q for q, _ in seen if "day AS MATERIALIZED" in q]
    assert "embedding_bits <~>" in days.split("day AS MATERIALIZED", 1)[1]
    for query, params in seen:
        assert_routed(db_url, query, params, worker_of(db_url, user))
