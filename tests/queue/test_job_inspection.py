"""What an inspector reads from the job table: counts per user, users with open jobs,
and a retry scoped to one user."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from mem01session.db import Database
from mem01session.queue import JobStore
from mem01session.queue.turns import TurnMessage

NOW = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


async def enqueue(store: JobStore, user: str, text: str, *, minutes: int = 0) -> int:
    at = NOW + timedelta(minutes=minutes)
    return await store.enqueue(user, "s1", [TurnMessage("user", text)], now=at)


async def fail_next(store: JobStore, *, minutes: int = 0) -> int:
    at = NOW + timedelta(minutes=minutes)
    [job] = await store.claim("w1", now=at, lease=timedelta(minutes=1))
    await store.fail(job, "w1", "extractor exploded", now=at, retry_at=None)
    return job.id


async def test_counts_open_users_and_scoped_retry(db: Database) -> None:
    store = JobStore(db)
    await enqueue(store, "alice", "hello")
    failed = await fail_next(store, minutes=1)
    await enqueue(store, "alice", "again", minutes=2)
    await enqueue(store, "Bob", "hi", minutes=3)

    alice = await store.counts("alice")
    assert (alice.counts, alice.unfinished, alice.failed) == ({"failed": 1, "pending": 1}, 1, 1)
    assert alice.updated_at == NOW + timedelta(minutes=2)
    assert (await store.counts("nobody")).counts == {}

    open_jobs = await store.open_by_user()
    assert list(open_jobs) == ["Bob", "alice"]  # most recent change first
    assert open_jobs["alice"].counts == {"failed": 1, "pending": 1}
    assert list(await store.open_by_user(contains="BO")) == ["Bob"]
    assert await store.open_by_user(contains="%") == {}

    # Another user's job id is not found; the owner's is sent back to the queue.
    assert await store.retry(failed, now=NOW, user_id="Bob") is None
    job = await store.retry(failed, now=NOW, user_id="alice")
    assert job is not None and (job.status, job.attempts) == ("pending", 0)
    assert (await store.counts("alice")).counts == {"pending": 2}
