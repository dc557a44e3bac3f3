"""Recording a turn: one job per idempotency key, nothing for an erased user, the workers
elsewhere told with the turn, and (on one server) one round trip for all of it."""

from __future__ import annotations

import asyncio
from typing import Any

import psycopg
import pytest
from sqlalchemy import text

from mem01session.engine import BeliefEngine
from mem01session.errors import UserErasedError
from mem01session.extraction import TurnMessage
from mem01session.queue import JobStore
from mem01session.queue.buffer import TurnBuffer
from mem01session.queue.notify import CHANNEL

pytestmark = pytest.mark.asyncio(loop_scope="module")

SAID = [TurnMessage("user", "I live in Oslo.")]


async def jobs_of(engine: BeliefEngine, user: str) -> int:
    async with engine.db.sa_engine.connect() as conn:
        found = await conn.scalar(
            text("SELECT count(*) FROM memory_jobs WHERE user_id = :u"), {"u": user}
        )
    return int(found or 0)


async def test_one_key_makes_one_job(module_engine: BeliefEngine, uid: str) -> None:
    store = JobStore(module_engine.db)
    now = module_engine.clock()
    first = await store.enqueue(uid, "conv", SAID, now=now, idempotency_key="turn-1")
    again = await store.enqueue(uid, "conv", SAID, now=now, idempotency_key="turn-1")
    other = await store.enqueue(uid, "conv", SAID, now=now, idempotency_key="turn-2")
    assert first == again != other
    assert await jobs_of(module_engine, uid) == 2


async def test_an_erased_users_turn_is_refused_and_nothing_is_stored(
    module_engine: BeliefEngine, uid: str
) -> None:
    store = JobStore(module_engine.db)
    await store.enqueue(uid, "conv", SAID, now=module_engine.clock())
    await module_engine.erase_user(uid)
    with pytest.raises(UserErasedError, match="erased"):
        await store.enqueue(uid, "conv", SAID, now=module_engine.clock(), notify=True)
    assert await jobs_of(module_engine, uid) == 0


async def test_the_workers_elsewhere_hear_of_a_new_turn_with_it(
    module_engine: BeliefEngine, module_db_url: str, uid: str
) -> None:
    store = JobStore(module_engine.db)

    async def turn(key: str, notify: bool) -> None:
        await store.enqueue(
            uid, "conv", SAID, now=module_engine.clock(), idempotency_key=key, notify=notify
        )

    async with await psycopg.AsyncConnection.connect(module_db_url, autocommit=True) as conn:
        await conn.execute(f"LISTEN {CHANNEL}")
        await turn("quiet", notify=False)
        await turn("new", notify=True)
        await turn("new", notify=True)  # already stored: no news
        await module_engine.db.direct.fetch(f"SELECT pg_notify('{CHANNEL}', 'end')", {})
        heard = []
        async for note in conn.notifies(timeout=30):
            heard.append(note.payload)
            if note.payload == "end":  # notifications arrive in commit order
                break
    assert heard == ["", "end"]  # one notification: the new turn's


async def test_on_one_server_a_turn_costs_one_round_trip(
    module_engine: BeliefEngine, uid: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = JobStore(module_engine.db)
    await store.enqueue(uid, "conv", SAID, now=module_engine.clock())  # the pool connected
    pool = module_engine.db.direct
    sent: list[str] = []
    fetch = pool.fetch

    async def counting(query: Any, params: Any, **kw: Any) -> Any:
        sent.append(query)
        return await fetch(query, params, **kw)

    monkeypatch.setattr(pool, "fetch", counting)
    await store.enqueue(uid, "conv", SAID, now=module_engine.clock(), notify=True)
    # A cluster needs the erased check, the insert and the notification apart.
    assert len(sent) == (3 if pool.distributed else 1)


def first_held(engine: BeliefEngine) -> tuple[JobStore, asyncio.Event, asyncio.Event]:
    """A job store whose first statement waits, mid-send, until ``go_on`` is set; ``entered``
    is set once it waits."""
    store = JobStore(engine.db)
    entered, go_on = asyncio.Event(), asyncio.Event()
    enqueue = store.enqueue

    async def held(*args: Any, **kwargs: Any) -> int:
        if not entered.is_set():
            entered.set()
            await go_on.wait()
        return await enqueue(*args, **kwargs)

    store.enqueue = held  # type: ignore[method-assign]
    return store, entered, go_on


async def test_sends_under_way_at_once_store_each_turn_once_in_order(
    module_engine: BeliefEngine, uid: str
) -> None:
    """Two runs of a session send at once (each from its own task) while a turn is being
    stored: the second waits for the first, which stores both turns; none twice, none
    lost (the second once stored the first's turn again and then dropped the next)."""
    store, entered, go_on = first_held(module_engine)
    buffer = TurnBuffer(uid, "conv")
    now = module_engine.clock()
    buffer.add([TurnMessage("user", "one"), TurnMessage("assistant", "1")], now)
    first = asyncio.create_task(buffer.send(store))
    await entered.wait()
    second = asyncio.create_task(buffer.send(store))
    buffer.add([TurnMessage("user", "two"), TurnMessage("assistant", "2")], now)
    go_on.set()
    await asyncio.gather(first, second)
    assert [said for _, said in buffer.enqueued] == ["one", "two"]
    assert buffer.unsent == 0
    assert await jobs_of(module_engine, uid) == 2


async def test_turns_discarded_while_one_is_being_stored_end_that_send_cleanly(
    module_engine: BeliefEngine, uid: str
) -> None:
    """The session drops what it has not sent (an erase, a strict failure) while a send is
    storing the oldest turn: that send ends without error, sends none of the dropped turns
    and leaves nothing queued (it once removed a turn it had not stored, or popped an empty
    queue)."""
    store, entered, go_on = first_held(module_engine)
    buffer = TurnBuffer(uid, "conv")
    now = module_engine.clock()
    buffer.add([TurnMessage("user", "one"), TurnMessage("assistant", "1")], now)
    buffer.add([TurnMessage("user", "two"), TurnMessage("assistant", "2")], now)
    sending = asyncio.create_task(buffer.send(store))
    await entered.wait()
    assert buffer.discard() == 2
    buffer.add([TurnMessage("user", "three"), TurnMessage("assistant", "3")], now)
    go_on.set()
    await sending  # no IndexError
    # "one" was on its way (stored); "two" was dropped; "three" came after the drop.
    assert [said for _, said in buffer.enqueued] == ["one", "three"]
    assert buffer.unsent == 0
    assert await jobs_of(module_engine, uid) == 2
