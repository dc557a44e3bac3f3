"""Runs first: the worker gives way while a run of its process recalls or enqueues, bounded
(:mod:`mem01session.queue.foreground`)."""

from __future__ import annotations

import asyncio
import math
import os
from datetime import timedelta

import pytest

from mem01session.engine import BeliefEngine
from mem01session.errors import ConfigError
from mem01session.extraction import RuleExtractor, TurnMessage
from mem01session.queue import JobStore, MemoryWorker, WorkerPolicy
from mem01session.queue.foreground import FOREGROUND, MARK_SECONDS, Foreground
from tests.child_env import fork_exit_code

pytestmark = pytest.mark.asyncio(loop_scope="module")


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


async def waiting(foreground: Foreground) -> None:
    """Until a worker waits on ``foreground`` (state, not time: the loop turns meanwhile)."""
    while not foreground.waiting:  # noqa: ASYNC110 (a count, not an event, says it)
        await asyncio.sleep(0)


async def test_a_mark_keeps_the_process_busy_until_it_ends_or_lapses() -> None:
    clock = Clock()
    foreground = Foreground(clock)
    assert not foreground.busy()
    run, enqueue = object(), object()
    foreground.mark(run)
    foreground.mark(enqueue)
    foreground.unmark(enqueue)
    assert foreground.busy()  # the run's mark is still on
    clock.now += MARK_SECONDS - 0.1
    foreground.mark(run)  # renewed by its next run
    clock.now += 0.2
    assert foreground.busy()
    clock.now += MARK_SECONDS
    assert not foreground.busy()  # never ended: it lapsed
    foreground.unmark(run)  # ending a lapsed mark changes nothing
    with foreground.marked():
        assert foreground.busy()
    assert not foreground.busy()


async def test_a_waiting_worker_goes_on_when_the_last_mark_ends() -> None:
    foreground = Foreground()
    first, second = object(), object()
    foreground.mark(first)
    foreground.mark(second)
    gave_way = asyncio.create_task(foreground.give_way(60))
    await waiting(foreground)
    foreground.unmark(first)
    await asyncio.sleep(0)
    assert not gave_way.done()  # one run is still marked
    await asyncio.to_thread(foreground.unmark, second)  # sessions live on other threads too
    assert await asyncio.wait_for(gave_way, 30) > 0
    assert foreground.waiting == 0


async def test_giving_way_is_bounded_and_costs_nothing_when_no_run_is_marked() -> None:
    foreground = Foreground()
    assert await foreground.give_way(60) == 0.0
    foreground.mark("run")
    assert await foreground.give_way(0) == 0.0  # yield_to_runs=0: never waits
    assert await foreground.give_way(0.01) >= 0.01  # a run that never ends: it goes on
    assert foreground.busy() and foreground.waiting == 0


@pytest.mark.parametrize("value", [-1, math.nan, math.inf, "0.25", True])
async def test_a_bad_yield_to_runs_is_refused_by_name(value: object) -> None:
    with pytest.raises(ConfigError, match="yield_to_runs"):
        WorkerPolicy(yield_to_runs=value)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("concurrency", "8", "concurrency must be a positive integer"),  # was a TypeError
        ("max_attempts", 0, "max_attempts must be a positive integer"),
        ("extract_timeout", "60", "extract_timeout must be a number of seconds"),
        ("extract_timeout", 0, "extract_timeout must be more than 0 seconds"),
        ("poll_interval", 0, "poll_interval must be more than 0 seconds"),  # polled non-stop
        ("backoff_base", -2.0, "backoff_base must be a number of seconds"),
        ("lease", 120, "lease must be a positive timedelta"),
        ("lease", timedelta(0), "lease must be a positive timedelta"),
        ("keyed", -1, "keyed must be an integer >= 0"),
        ("listen", "yes", "listen must be True or False"),
    ],
)
async def test_every_policy_field_of_the_wrong_kind_is_refused_by_name(
    field: str, value: object, message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        WorkerPolicy(**{field: value})  # type: ignore[arg-type]


async def test_the_worker_claims_nothing_while_a_run_is_marked_then_catches_up(
    module_engine: BeliefEngine, uid: str
) -> None:
    store = JobStore(module_engine.db)
    user = f"{uid}-ada"
    job = await store.enqueue(
        user, "conv", [TurnMessage("user", "I live in Lisbon.")], now=module_engine.clock()
    )
    worker = MemoryWorker(module_engine, RuleExtractor(), policy=WorkerPolicy(yield_to_runs=60))
    run = object()
    FOREGROUND.mark(run)
    try:
        worker.start()
        await asyncio.wait_for(waiting(FOREGROUND), 30)
        before = await store.get(job)
        assert before is not None and before.status == "pending"  # not claimed meanwhile
        FOREGROUND.unmark(run)
        assert await worker.wait_until_done(user, {job}, timeout=30)
    finally:
        FOREGROUND.unmark(run)
        await worker.stop()
    assert worker.gave_way_s > 0
    assert [b.content for b in await module_engine.history(user)] == ["Lives in Lisbon"]


@pytest.mark.parametrize("queued_ago", [0, 120])
async def test_a_job_gives_way_only_until_its_turn_is_yield_to_runs_old(
    module_engine: BeliefEngine, uid: str, queued_ago: int
) -> None:
    store = JobStore(module_engine.db)
    user = f"{uid}-bo"
    queued = module_engine.clock() - timedelta(seconds=queued_ago)
    job = await store.enqueue(user, "conv", [TurnMessage("user", "I live in Oslo.")], now=queued)
    worker = MemoryWorker(module_engine, RuleExtractor(), policy=WorkerPolicy(yield_to_runs=60))
    run = object()
    FOREGROUND.mark(run)
    try:
        processing = asyncio.create_task(worker.run_once())  # claims without giving way
        if queued_ago < 60:  # a fresh turn waits for the run
            await asyncio.wait_for(waiting(FOREGROUND), 30)
            assert not processing.done()
            FOREGROUND.unmark(run)
        assert await asyncio.wait_for(processing, 30) == 1  # an old one does not
    finally:
        FOREGROUND.unmark(run)
    assert (worker.gave_way_s > 0) is (queued_ago < 60)
    done = await store.get(job)
    assert done is not None and done.status == "done"


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
async def test_a_forked_child_starts_with_no_marks_and_a_free_lock() -> None:
    run = object()
    FOREGROUND.mark(run)
    try:
        with FOREGROUND._lock:  # as another thread of the parent may hold it at the fork
            pid = os.fork()
            if pid == 0:  # the child: a session's mark must neither hang nor see the parent's
                ok = not FOREGROUND.busy()
                with FOREGROUND.marked():
                    ok = ok and FOREGROUND.busy()
                os._exit(0 if ok and not FOREGROUND.busy() else 1)
        code = await asyncio.to_thread(fork_exit_code, pid)  # not hung on the parent's lock
    finally:
        FOREGROUND.unmark(run)
    assert code == 0
