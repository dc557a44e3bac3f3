"""Group commit: turns ready together are written in one transaction with their jobs'
completion; when the group fails, each turn is written alone and meets its own error. On a
cluster distributed by user (Citus: ``tests/citus/test_queue_group_commit.py``) every turn
has a transaction of its own."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
from sqlalchemy import text

from mem01session.engine import BeliefEngine
from mem01session.engine.ops import Op, Provenance
from mem01session.extraction import TurnMessage
from mem01session.queue import JobStore
from mem01session.queue.completion import JobLostError
from mem01session.queue.failed_jobs import utterances
from mem01session.queue.group_commit import GroupCommit, Ready
from mem01session.queue.owners import new_worker_id

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def claimed(engine: BeliefEngine, users: list[str], worker: str) -> list[Ready]:
    """One claimed turn per user, its batch (one ADD and the turn's words) ready."""
    store = JobStore(engine.db)
    now = engine.clock()
    for user in users:
        await store.enqueue(user, "conv", [TurnMessage("user", f"{user} likes tea")], now=now)
    jobs = await store.claim(worker, now=now, lease=timedelta(minutes=2), limit=len(users))
    assert sorted(j.user_id for j in jobs) == sorted(users)
    out = []
    for job in jobs:
        batch = await engine.prepare(
            job.user_id,
            [Op.add(f"{job.user_id} likes tea")],
            provenance=Provenance(session_id="conv", job_id=job.id, extractor="test"),
            utterances=utterances(job.turn()),
        )
        out.append(Ready(job, batch, {"output_tokens": 3}))
    return out


async def statuses(engine: BeliefEngine, users: list[str]) -> dict[str, str]:
    async with engine.db.sa_engine.connect() as conn:
        rows = await conn.execute(
            text("SELECT user_id, status FROM memory_jobs WHERE user_id = ANY(:u)"),
            {"u": users},
        )
        return {str(u): str(s) for u, s in rows}


async def test_turns_ready_together_commit_as_one_group(
    module_engine: BeliefEngine, uid: str
) -> None:
    users = [f"{uid}-{i}" for i in range(4)]
    worker = new_worker_id()
    commits = GroupCommit(module_engine, JobStore(module_engine.db), worker, limit=8)
    ready = await claimed(module_engine, users, worker)

    await asyncio.gather(*(commits.write(r) for r in ready))

    grouped = module_engine.groups_writes
    assert (commits.groups, commits.transactions) == ((1, 1) if grouped else (0, 4))
    assert await statuses(module_engine, users) == dict.fromkeys(users, "done")
    for user in users:
        assert [b.content for b in await module_engine.history(user)] == [f"{user} likes tea"]
        assert len(await module_engine.episodes(user)) == 1


async def test_a_group_that_fails_is_written_turn_by_turn(
    module_engine: BeliefEngine, uid: str
) -> None:
    users = [f"{uid}-{i}" for i in range(4)]
    worker = new_worker_id()
    commits = GroupCommit(module_engine, JobStore(module_engine.db), worker, limit=8)
    ready = await claimed(module_engine, users, worker)
    lost = ready[2].job  # taken back by another worker meanwhile
    async with module_engine.db.sa_engine.begin() as conn:
        await conn.execute(
            text("UPDATE memory_jobs SET lease_owner = 'elsewhere' WHERE id = :id"),
            {"id": lost.id},
        )

    results = await asyncio.gather(*(commits.write(r) for r in ready), return_exceptions=True)

    assert commits.groups == 0
    assert results[:2] == [None, None] and results[3] is None
    assert isinstance(results[2], JobLostError)
    done = {u: "done" for u in users if u != lost.user_id}
    assert await statuses(module_engine, users) == done | {lost.user_id: "running"}
    assert await module_engine.history(lost.user_id) == []  # nothing of its turn written
    assert await module_engine.episodes(lost.user_id) == []


async def test_a_group_holds_one_turn_per_user_and_at_most_its_limit(
    module_engine: BeliefEngine, uid: str
) -> None:
    users = [f"{uid}-{i}" for i in range(5)]
    worker = new_worker_id()
    commits = GroupCommit(module_engine, JobStore(module_engine.db), worker, limit=2)
    ready = await claimed(module_engine, users, worker)

    await asyncio.gather(*(commits.write(r) for r in ready))

    # 2 + 2, then the fifth alone (on a cluster, each alone)
    assert commits.groups == (2 if module_engine.groups_writes else 0)
    assert await statuses(module_engine, users) == dict.fromkeys(users, "done")
