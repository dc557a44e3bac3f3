"""The worker: several users at once with each user's turns in order, one setting for the
extraction timeout, and claims of dead processes taken back (issue 25).

One database for the module; each test uses users of its own and drains the jobs it makes.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime, timedelta

import pytest

from mem01session import Memory, Settings
from mem01session.embeddings import Embedder, Vector
from mem01session.engine import BeliefEngine
from mem01session.engine.ops import Op
from mem01session.errors import EmbeddingError
from mem01session.extraction import Candidate, Extraction, Turn, TurnMessage
from mem01session.extraction.base import WAITING_AFTER
from mem01session.queue import JobStore, MemoryWorker, WorkerPolicy
from mem01session.queue.owners import gone, new_worker_id, parse

pytestmark = pytest.mark.asyncio(loop_scope="module")


class Recording:
    """Adds what the user said as a belief; a turn holding "hold" waits for ``release``."""

    name = "recording-v1"

    def __init__(self) -> None:
        self.started: list[str] = []
        self.holding = asyncio.Event()
        self.release = asyncio.Event()

    async def extract(
        self, turn: Turn, candidates: Sequence[Candidate], now: datetime
    ) -> Extraction:
        said = " ".join(m.text for m in turn.messages if m.role == "user")
        self.started.append(said)
        if "hold" in said:
            self.holding.set()
            await self.release.wait()
        return Extraction(ops=(Op.add(f"Said {said}"),))


async def enqueue(store: JobStore, user: str, text: str, now: datetime) -> int:
    return await store.enqueue(user, "conv", [TurnMessage("user", text)], now=now)


async def test_other_users_go_on_while_one_waits_and_each_users_turns_keep_their_order(
    module_engine: BeliefEngine, uid: str
) -> None:
    ada, bob = f"{uid}-ada", f"{uid}-bob"
    store = JobStore(module_engine.db)
    now = module_engine.clock()
    ada_jobs = [
        await enqueue(store, ada, f"ada {n} hold" if n == 0 else f"ada {n}", now) for n in range(2)
    ]
    bob_jobs = [await enqueue(store, bob, f"bob {n}", now) for n in range(3)]
    extractor = Recording()
    worker = MemoryWorker(module_engine, extractor, policy=WorkerPolicy(concurrency=4))
    worker.start()
    try:
        await asyncio.wait_for(extractor.holding.wait(), 30)
        # Ada's first turn is held: Bob's turns are applied meanwhile, Ada's second waits.
        assert await worker.wait_until_done(bob, set(bob_jobs), timeout=30)
        assert "ada 1" not in extractor.started
        extractor.release.set()
        assert await worker.wait_until_done(ada, set(ada_jobs), timeout=30)
    finally:
        await worker.stop()
    assert [s for s in extractor.started if s.startswith("ada")] == ["ada 0 hold", "ada 1"]
    assert [s for s in extractor.started if s.startswith("bob")] == ["bob 0", "bob 1", "bob 2"]
    history = await module_engine.history(bob)
    assert sorted(b.content for b in history) == ["Said bob 0", "Said bob 1", "Said bob 2"]


class Sleepy:
    """An extractor that takes longer than it is allowed (a CPU-only server)."""

    name = "sleepy-v1"

    async def extract(
        self, turn: Turn, candidates: Sequence[Candidate], now: datetime
    ) -> Extraction:
        await asyncio.Event().wait()  # cut off by the worker's timeout
        raise AssertionError("unreachable")


async def test_one_setting_bounds_an_extraction(module_engine: BeliefEngine, uid: str) -> None:
    # A Memory's worker takes MEM01_LLM_TIMEOUT unless the extractor states its own.
    memory = Memory(Settings(llm_timeout=0.2), engine=module_engine, extractor=Sleepy())
    try:
        worker = await memory.worker()
        assert worker.extract_timeout == 0.2
    finally:
        await memory.aclose()
    assert Settings().llm_timeout == 60  # OpenAI's API
    assert Settings(openai_base_url="http://127.0.0.1:8080/v1").llm_timeout == 300  # local

    store = JobStore(module_engine.db)
    job_id = await enqueue(store, uid, "I live in Oslo.", module_engine.clock())
    policy = WorkerPolicy(max_attempts=1, extract_timeout=0.2)
    worker = MemoryWorker(module_engine, Sleepy(), policy=policy)
    assert await worker.run_once() == 1
    (job,) = (await store.statuses(uid, [job_id])).values()
    assert job.status == "failed" and "within 0.2 s (MEM01_LLM_TIMEOUT)" in (job.last_error or "")
    assert [e.content for e in await module_engine.episodes(uid)] == ["I live in Oslo."]


class RateLimited:
    """An extractor waiting out a rate limit when its time runs out (as OpenAIExtractor
    does, told to retry after longer than the extraction may take)."""

    name = "rate-limited-v1"

    async def extract(
        self, turn: Turn, candidates: Sequence[Candidate], now: datetime
    ) -> Extraction:
        WAITING_AFTER.set("HTTP 429: Rate limit reached")
        await asyncio.Event().wait()  # cut off by the worker's timeout
        raise AssertionError("unreachable")


async def test_an_extraction_cut_short_while_waiting_says_what_it_waited_after(
    module_engine: BeliefEngine, uid: str
) -> None:
    # It said only that time ran out: nothing named the rate limit.
    store = JobStore(module_engine.db)
    job_id = await enqueue(store, uid, "I live in Oslo.", module_engine.clock())
    policy = WorkerPolicy(max_attempts=1, extract_timeout=0.2)
    assert await MemoryWorker(module_engine, RateLimited(), policy=policy).run_once() == 1
    (job,) = (await store.statuses(uid, [job_id])).values()
    assert "within 0.2 s (MEM01_LLM_TIMEOUT); it was waiting to try again after: HTTP 429" in (
        job.last_error or ""
    )


async def test_the_bound_on_jobs_at_once_is_the_policys_else_what_the_extractor_states(
    module_engine: BeliefEngine,
) -> None:
    from mem01session.extraction import RuleExtractor

    assert MemoryWorker(module_engine, RuleExtractor()).concurrency == 64  # no model calls
    assert MemoryWorker(module_engine, Recording()).concurrency == 8  # states nothing
    policy = WorkerPolicy(concurrency=3)
    assert MemoryWorker(module_engine, RuleExtractor(), policy=policy).concurrency == 3


def dead_owner() -> str:
    """A worker id of this machine whose process has ended."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    mine = parse(new_worker_id())
    assert mine is not None
    return str(replace(mine, pid=child.pid))


@pytest.mark.slow
async def test_claims_of_a_dead_process_are_taken_back_when_a_worker_starts(
    module_engine: BeliefEngine, uid: str
) -> None:
    store = JobStore(module_engine.db)
    now = module_engine.clock()
    lease = timedelta(seconds=120)
    dead, alive, legacy = dead_owner(), new_worker_id(), "4242-0badc0de"
    assert gone(dead) and not gone(alive) and not gone(legacy)
    ids = {}
    for owner in (dead, alive, legacy):
        user = f"{uid}-{len(ids)}"
        ids[owner] = await enqueue(store, user, "I have a cat named Miso.", now)
        assert [j.id for j in await store.claim(owner, now=now, lease=lease)] == [ids[owner]]

    worker = MemoryWorker(module_engine, Recording())
    assert await worker.run_once() == 1  # the dead process's job only, well within its lease
    assert worker.taken_back == [ids[dead]]
    (job,) = (await store.statuses(f"{uid}-0", [ids[dead]])).values()
    assert (job.status, job.attempts) == ("done", 2)
    # A live process's claim, and an id that names no process, are left to their lease.
    for owner in (alive, legacy):
        assert await store.release(owner, now=now) == [ids[owner]]
    while await worker.run_once():
        pass


class BrokenEmbedder:
    """The module's embedder, failing with ``error`` (the embedding boundary)."""

    def __init__(self, inner: Embedder, error: EmbeddingError) -> None:
        self.name, self.dim, self.error = inner.name, inner.dim, error

    async def embed(self, texts: Sequence[str]) -> list[Vector]:
        raise self.error


@pytest.mark.parametrize(
    ("retryable", "status"), [(True, "pending"), (False, "failed")], ids=["died", "refused"]
)
async def test_a_turn_whose_embedding_process_died_is_tried_again_not_parked(
    module_engine: BeliefEngine, uid: str, retryable: bool, status: str
) -> None:
    error = EmbeddingError("the embedding process (pid 1) exited", retryable=retryable)
    engine = BeliefEngine(module_engine.db, BrokenEmbedder(module_engine.embedder, error))
    store = JobStore(module_engine.db)
    job_id = await enqueue(store, uid, "I live in Oslo.", module_engine.clock())
    worker = MemoryWorker(engine, Recording(), policy=WorkerPolicy(max_attempts=3))
    assert await worker.run_once() == 1
    (job,) = (await store.statuses(uid, [job_id])).values()
    assert job.status == status and job.attempts == 1  # died: retried after its backoff
    if retryable:  # its next try, after the backoff, by a worker whose embedder works
        later = BeliefEngine(
            module_engine.db,
            module_engine.embedder,
            clock=lambda: module_engine.clock() + timedelta(minutes=1),
        )
        assert await MemoryWorker(later, Recording()).run_once() == 1
        (job,) = (await store.statuses(uid, [job_id])).values()
        assert job.status == "done" and job.attempts == 2
