"""Turns applied out of the order they were said: what the user said more recently wins.

The real rule extractor and worker; a turn's job fails once (as a model outage would make
it), the next turn is applied, then the failed one is retried.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import pytest

from mem01session.engine import BeliefEngine
from mem01session.extraction import Candidate, Extraction, RuleExtractor, Turn, TurnMessage
from mem01session.queue import JobStore, MemoryWorker, WorkerPolicy

pytestmark = pytest.mark.asyncio(loop_scope="module")

MONDAY = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
WEDNESDAY = MONDAY + timedelta(days=2)


class FailsOnce(RuleExtractor):
    """The rule extractor, failing the first time it sees ``word`` (a model outage)."""

    def __init__(self, word: str) -> None:
        super().__init__()
        self.word = word
        self.failed = False

    async def extract(
        self, turn: Turn, candidates: Sequence[Candidate], now: datetime
    ) -> Extraction:
        if not self.failed and any(self.word in m.text for m in turn.messages):
            self.failed = True
            raise RuntimeError("the model is down")
        return await super().extract(turn, candidates, now)


async def say(store: JobStore, user: str, text: str, now: datetime) -> int:
    return await store.enqueue(user, "chat", [TurnMessage("user", text)], now=now)


async def test_a_retried_older_turn_does_not_replace_what_was_said_after_it(
    module_engine: BeliefEngine, uid: str
) -> None:
    store = JobStore(module_engine.db)
    lisbon = await say(store, uid, "I live in Lisbon.", MONDAY)
    porto = await say(store, uid, "I moved to Porto.", WEDNESDAY)
    worker = MemoryWorker(module_engine, FailsOnce("Lisbon"), policy=WorkerPolicy(max_attempts=1))
    assert await worker.run_once() == 1  # Monday's turn fails and is parked
    assert await worker.run_once() == 1  # Wednesday's is applied
    statuses = await store.statuses(uid, [lisbon, porto])
    assert (statuses[lisbon].status, statuses[porto].status) == ("failed", "done")
    assert await store.retry(lisbon, now=module_engine.clock()) is not None
    assert await worker.run_once() == 1
    assert (await store.statuses(uid, [lisbon]))[lisbon].status == "done"

    [current] = await module_engine.history(uid, include_inactive=False)
    assert (current.content, current.valid_from) == ("Lives in Porto", WEDNESDAY)
    recalled = await module_engine.recall(uid, "Where do I live?")
    assert [sb.belief.content for sb in recalled.beliefs] == ["Lives in Porto"]
    # (Monday's words may still be quoted, dated: what was said, not what holds.)
    assert "- Lives in Porto" in recalled.text and "Lives in Lisbon" not in recalled.text
    # Monday's word is history: it held from Monday until Porto, which superseded it.
    [old] = [b for b in await module_engine.history(uid) if b.status != "active"]
    assert (old.content, old.status, old.superseded_by) == (
        "Lives in Lisbon",
        "superseded",
        current.id,
    )
    assert (old.valid_from, old.valid_to) == (MONDAY, WEDNESDAY)
    assert [(s.job_id, s.observed_at) for s in old.sources] == [(lisbon, MONDAY)]
    assert [s.job_id for s in current.sources] == [porto]


async def test_turns_applied_in_the_order_they_were_said_still_supersede(
    module_engine: BeliefEngine, uid: str
) -> None:
    store = JobStore(module_engine.db)
    await say(store, uid, "I live in Lisbon.", MONDAY)
    await say(store, uid, "I moved to Porto.", WEDNESDAY)
    worker = MemoryWorker(module_engine, RuleExtractor())
    assert await worker.run_once() + await worker.run_once() == 2
    [old, current] = await module_engine.history(uid)
    assert (current.content, current.status) == ("Lives in Porto", "active")
    assert (old.content, old.status, old.valid_to) == ("Lives in Lisbon", "superseded", WEDNESDAY)
