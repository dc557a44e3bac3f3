"""A turn of small talk is not sent to the extractor (no model call: it states nothing),
but its words are kept as episodes; an answer to a question always is sent."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

import pytest

from mem01session.engine import BeliefEngine
from mem01session.extraction import Candidate, Extraction, Turn, TurnMessage
from mem01session.queue import JobStore, MemoryWorker, WorkerPolicy

pytestmark = pytest.mark.asyncio(loop_scope="module")


class Counting:
    """Proposes nothing; notes the user's words of every turn it is asked about."""

    name = "counting-v1"

    def __init__(self) -> None:
        self.asked: list[str] = []

    async def extract(
        self, turn: Turn, candidates: Sequence[Candidate], now: datetime
    ) -> Extraction:
        self.asked.append(turn.messages[0].text)
        return Extraction(ops=())


async def say(store: JobStore, user: str, words: str, reply: str = "Noted.") -> None:
    turn = [TurnMessage("user", words), TurnMessage("assistant", reply)]
    await store.enqueue(user, "chat", turn, now=datetime.now(UTC))


async def drain(engine: BeliefEngine, policy: WorkerPolicy | None = None) -> list[str]:
    extractor = Counting()
    worker = MemoryWorker(engine, extractor, policy=policy)
    while await worker.run_once():
        pass
    return extractor.asked


async def test_small_talk_costs_no_extraction_but_is_kept(
    module_engine: BeliefEngine, uid: str
) -> None:
    store = JobStore(module_engine.db)
    await say(store, uid, "I moved to Porto last week.", "Do you like it there?")
    await say(store, uid, "Yes!", "Great.")  # answers the question: sent
    await say(store, uid, "Thanks, that's all for today.")  # states nothing: not sent
    assert await drain(module_engine) == ["I moved to Porto last week.", "Yes!"]
    kept = [e.content for e in await module_engine.episodes(uid)]
    assert "Thanks, that's all for today." in kept
    assert (await store.counts(uid)).counts == {"done": 3}


async def test_the_policy_can_send_every_turn(module_engine: BeliefEngine, uid: str) -> None:
    store = JobStore(module_engine.db)
    await say(store, uid, "Go for it, Jon! You got this!")
    asked = await drain(module_engine, WorkerPolicy(skip_small_talk=False))
    assert asked == ["Go for it, Jon! You got this!"]
