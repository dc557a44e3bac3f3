"""A worker renews the leases of the jobs it works on: an extraction slower than the lease
is not claimed again by another worker (nor paid for twice); a claim nobody renews lapses.

The lease is made short; the slow extraction waits on an event the test sets once the
other worker has tried to claim, never on a sleep.
"""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta

import pytest

from mem01session.engine import BeliefEngine
from mem01session.extraction import TurnMessage
from mem01session.queue import JobStore, MemoryWorker, WorkerPolicy
from mem01session.queue.heartbeat import renew_leases
from tests.queue.test_worker import Recording

pytestmark = pytest.mark.asyncio(loop_scope="module")

# Renewed every third of it: a renewal may come up to two thirds of the lease late.
LEASE = timedelta(seconds=6)  # two renewals may be late by 2 s each on a busy machine


async def lease_until(store: JobStore, user: str, job_id: int) -> datetime | None:
    rows = await store.db.direct.fetch(
        "SELECT lease_until FROM memory_jobs WHERE user_id = %(u)s AND id = %(id)s",
        {"u": user, "id": job_id},
    )
    return rows[0]["lease_until"] if rows else None


async def enqueue(store: JobStore, user: str, text: str, engine: BeliefEngine) -> int:
    return await store.enqueue(user, "conv", [TurnMessage("user", text)], now=engine.clock())


async def test_a_live_workers_job_is_not_claimed_again_while_its_extraction_runs(
    module_engine: BeliefEngine, uid: str
) -> None:
    store = JobStore(module_engine.db)
    slow, quick = Recording(), Recording()
    quick.release.set()
    # Its loop claims once, then again only when its job ends: the claim tried while the
    # job is in work is the other worker's.
    mine = MemoryWorker(module_engine, slow, policy=WorkerPolicy(lease=LEASE, poll_interval=30))
    other = MemoryWorker(module_engine, quick, policy=WorkerPolicy(lease=LEASE))
    # A first job pays what a process's first job costs on its event loop (imports, the
    # first connections), which would hold up the renewals of the job below.
    first = await enqueue(store, f"{uid}-first", "a first turn", module_engine)
    assert await other.run_once() == 1
    assert await other.wait_until_done(f"{uid}-first", {first}, timeout=30)
    job_id = await enqueue(store, uid, "hold: a turn the model is slow on", module_engine)
    mine.start()
    try:
        await asyncio.wait_for(slow.holding.wait(), 30)
        claimed_until = await lease_until(store, uid, job_id)
        assert claimed_until is not None
        # Past the lease the job was claimed with: unrenewed, it would be anyone's now.
        left = (claimed_until - module_engine.clock()).total_seconds()
        await asyncio.sleep(max(0.0, left) + LEASE.total_seconds() / 6)
        assert await other.run_once() == 0, "the other worker claimed a job still in work"
        assert quick.started == ["a first turn"]
        renewed_until = await lease_until(store, uid, job_id)
        assert renewed_until is not None and renewed_until > claimed_until
        slow.release.set()
        assert await mine.wait_until_done(uid, {job_id}, timeout=30)
    finally:
        slow.release.set()
        await mine.stop()
        await other.stop()
    job = await store.get(job_id)
    assert job is not None
    assert (job.status, job.attempts) == ("done", 1)
    assert slow.started == ["hold: a turn the model is slow on"]  # one model call, not two
    assert [b.content for b in await module_engine.history(uid)] == [
        "Said hold: a turn the model is slow on"
    ]
    assert await lease_until(store, uid, job_id) is None


async def test_a_claim_nobody_renews_lapses_and_its_old_owner_cannot_renew_it(
    module_engine: BeliefEngine, uid: str
) -> None:
    store = JobStore(module_engine.db)
    now = module_engine.clock()
    said = [TurnMessage("user", "a turn of a worker that died")]
    job_id = await store.enqueue(uid, "conv", said, now=now - 4 * LEASE)
    # Claimed long ago by a worker elsewhere that renewed nothing since: lapsed.
    [dead] = await store.claim("worker-elsewhere", now=now - 3 * LEASE, lease=LEASE)
    quick = Recording()
    quick.release.set()
    other = MemoryWorker(module_engine, quick, policy=WorkerPolicy(lease=LEASE))
    [taken] = await store.claim(other.worker_id, now=now, lease=LEASE)
    assert taken.id == dead.id == job_id and taken.attempts == 2
    # The old owner's heartbeat, late: the job is another's now, its lease left as it is.
    before = await lease_until(store, uid, job_id)
    later = now + LEASE
    assert (
        await renew_leases(store.db.direct, [dead], "worker-elsewhere", now=later, lease=LEASE)
        == set()
    )
    assert await lease_until(store, uid, job_id) == before
    assert await renew_leases(
        store.db.direct, [taken], other.worker_id, now=later, lease=LEASE
    ) == {job_id}
    assert await lease_until(store, uid, job_id) == later + LEASE
    await store.release(other.worker_id, now=module_engine.clock())
    assert await other.run_once() == 1
    assert await other.wait_until_done(uid, {job_id}, timeout=30)
    await other.stop()
