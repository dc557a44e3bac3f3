"""Bound: work awaited for at most a given time, its clean-up after cancellation included
(as psycopg's, which waits for a server that may never answer)."""

from __future__ import annotations

import asyncio

import pytest

from mem01session import bounded
from mem01session.bounded import Bound


class StubbornWork:
    """Work whose clean-up after a cancellation waits on ``cleaned`` (as a driver waits
    for the server to cancel its statement); it gives in to the ``gives_in_at``-th
    cancellation (never, when 0)."""

    def __init__(self, gives_in_at: int) -> None:
        self.gives_in_at = gives_in_at
        self.cancellations = 0
        self.cleaned = asyncio.Event()
        self.started = asyncio.Event()
        self.ended: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    async def __call__(self) -> str:
        self.started.set()
        try:
            while True:
                try:
                    waiting = self.cleaned if self.cancellations else asyncio.Event()
                    await waiting.wait()
                    return "cleaned up"
                except asyncio.CancelledError:
                    self.cancellations += 1
                    if self.cancellations == self.gives_in_at:
                        raise
        finally:
            self.ended.set_result(None)


async def test_work_done_in_time_gives_its_result() -> None:
    async def work() -> int:
        await asyncio.sleep(0)
        return 7

    bound = Bound(30)
    assert await bound.run(work()) == 7
    assert not bound.expired
    assert await Bound(None).run(work()) == 7


async def test_work_that_runs_out_of_time_is_cancelled_once_if_that_ends_it() -> None:
    work = StubbornWork(gives_in_at=1)
    bound = Bound(0.05)
    with pytest.raises(TimeoutError, match=r"cut short after 0\.05 s"):
        await bound.run(work())
    assert bound.expired
    assert work.cancellations == 1 and work.ended.done()


async def test_a_clean_up_that_waits_is_cancelled_again() -> None:
    """psycopg, cancelled mid-statement, waits up to 10 s for a server that may not answer;
    the second cancellation makes it drop the connection instead."""
    work = StubbornWork(gives_in_at=2)
    with pytest.raises(TimeoutError):
        await Bound(0.05).run(work())
    assert work.cancellations == 2 and work.ended.done()
    assert not work.cleaned.is_set()  # the caller did not wait for the clean-up


async def test_work_deaf_to_both_cancellations_is_left_and_kept_until_it_ends() -> None:
    work = StubbornWork(gives_in_at=0)
    with pytest.raises(TimeoutError):
        await Bound(0.05).run(work())
    assert work.cancellations == 2 and not work.ended.done()
    assert len(bounded._abandoned) == 1  # referenced, so not collected while it runs
    work.cleaned.set()
    await work.ended
    for _ in range(3):  # the task ends, then its done-callbacks run: loop iterations
        await asyncio.sleep(0)
    assert not bounded._abandoned


async def test_cancelling_the_caller_cancels_the_work() -> None:
    work = StubbornWork(gives_in_at=1)
    caller = asyncio.ensure_future(Bound(30).run(work()))
    await work.started.wait()
    caller.cancel()
    with pytest.raises(asyncio.CancelledError):
        await caller
    assert work.cancellations == 1 and work.ended.done()


async def test_stop_says_whether_the_work_ended() -> None:
    ending, deaf = StubbornWork(gives_in_at=2), StubbornWork(gives_in_at=0)
    tasks = [asyncio.ensure_future(ending()), asyncio.ensure_future(deaf())]
    await asyncio.gather(ending.started.wait(), deaf.started.wait())
    assert await bounded.stop(tasks[0]) is True
    assert await bounded.stop(tasks[1]) is False  # a worker then keeps its claims
    deaf.cleaned.set()
    assert await tasks[1] == "cleaned up"
