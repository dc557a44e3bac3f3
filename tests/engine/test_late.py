"""Ops of a turn said before the belief they act on was last said (engine/late.py)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from mem01session.db import Database
from mem01session.embeddings import HashingEmbedder
from mem01session.engine import BeliefEngine
from mem01session.engine.ops import Op, Provenance
from mem01session.engine.records import Belief, Change

from .conftest import TickingClock

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest.fixture
def engine(module_db: Database, embedder: HashingEmbedder, clock: TickingClock) -> BeliefEngine:
    """All tests here share one database; each works as its own user (``uid``)."""
    return BeliefEngine(module_db, embedder, clock=clock)


def at(day: int) -> datetime:
    return datetime(2026, 1, day, tzinfo=UTC)


def said(day: int, job: int) -> Provenance:
    return Provenance(session_id="s", observed_at=at(day), extractor="test", job_id=job)


async def apply(engine: BeliefEngine, uid: str, op: Op, day: int, job: int) -> Change:
    [change] = (await engine.apply(uid, [op], provenance=said(day, job))).changes
    return change


async def beliefs(engine: BeliefEngine, uid: str) -> dict[str, Belief]:
    return {b.content: b for b in await engine.history(uid)}


async def test_a_late_supersede_becomes_history_of_the_newer_belief(
    engine: BeliefEngine, uid: str
) -> None:
    porto = (await apply(engine, uid, Op.add("Lives in Porto", key="city"), 5, 2)).belief_id
    late = await apply(engine, uid, Op.supersede(porto, "Lives in Lisbon", evidence="Lisbon"), 3, 1)
    assert late.op == "HISTORY" and late.replaced == ()
    found = await beliefs(engine, uid)
    assert found["Lives in Porto"].status == "active"
    lisbon = found["Lives in Lisbon"]
    assert (lisbon.status, lisbon.superseded_by, lisbon.key) == ("superseded", porto, "city")
    assert (lisbon.valid_from, lisbon.valid_to) == (at(3), at(5))
    assert [(s.job_id, s.evidence) for s in lisbon.sources] == [(1, "Lisbon")]
    # The ledger says it as of any replaced belief: Porto superseding it.
    [event] = [e for e in await engine.ledger(uid) if lisbon.id in e.related_ids]
    assert (event.op, event.belief_id, event.job_id) == ("SUPERSEDE", porto, 1)
    assert (event.before or {})["status"] == "superseded"
    assert (event.after or {})["status"] == "active"
    assert [b.belief.content for b in (await engine.recall(uid, "Where do I live?")).beliefs] == [
        "Lives in Porto"
    ]


async def test_a_belief_restated_or_said_to_hold_since_long_ago_is_the_later_word(
    engine: BeliefEngine, uid: str
) -> None:
    # Day 1: Porto. Day 3: Lisbon (its job late). Day 5: Porto again, a confirmation.
    porto = (await apply(engine, uid, Op.add("Lives in Porto", key="city"), 1, 1)).belief_id
    assert (await apply(engine, uid, Op.add("Lives in Porto", key="city"), 5, 3)).op == "CONFIRM"
    assert (await apply(engine, uid, Op.supersede(porto, "Lives in Lisbon"), 3, 2)).op == "HISTORY"
    # Day 5: "I've worked at Acme since 2020". Day 3: Initech (late).
    acme = Op.add("Works at Acme", key="work", valid_from=datetime(2020, 1, 1, tzinfo=UTC))
    acme_id = (await apply(engine, uid, acme, 5, 4)).belief_id
    assert (await apply(engine, uid, Op.supersede(acme_id, "Works at Initech"), 3, 5)).op == (
        "HISTORY"
    )
    found = await beliefs(engine, uid)
    assert {c: b.status for c, b in found.items()} == {
        "Lives in Porto": "active",
        "Lives in Lisbon": "superseded",
        "Works at Acme": "active",
        "Works at Initech": "superseded",
    }
    # Acme began before Initech was said: Initech's interval is empty, never negative.
    assert found["Works at Initech"].valid_to == found["Works at Initech"].valid_from == at(3)


async def test_a_late_invalidate_or_confidence_leaves_the_belief_as_it_is(
    engine: BeliefEngine, uid: str
) -> None:
    tea = (await apply(engine, uid, Op.add("Likes tea", confidence=0.8), 5, 2)).belief_id
    assert await apply(engine, uid, Op.invalidate(tea, "gave up"), 3, 1) == Change("KEPT", tea)
    assert await apply(engine, uid, Op.update(tea, confidence=0.2), 4, 3) == Change("KEPT", tea)
    kept = (await beliefs(engine, uid))["Likes tea"]
    assert (kept.status, kept.confidence, kept.valid_to) == ("active", 0.8, None)


async def test_a_late_restatement_confirms_the_active_belief(
    engine: BeliefEngine, uid: str
) -> None:
    cats = (await apply(engine, uid, Op.add("Has a cat"), 1, 1)).belief_id
    dogs = (await apply(engine, uid, Op.add("Has a dog"), 5, 3)).belief_id
    change = await apply(engine, uid, Op.supersede(dogs, "Has a cat"), 3, 2)
    assert change.op == "CONFIRM" and change.belief_id == cats
    assert {b.content: b.status for b in await engine.history(uid)} == {
        "Has a cat": "active",
        "Has a dog": "active",
    }


async def test_ops_said_after_the_belief_and_corrections_apply_as_ever(
    engine: BeliefEngine, uid: str
) -> None:
    lisbon = (await apply(engine, uid, Op.add("Lives in Lisbon", key="city"), 3, 1)).belief_id
    moved = await apply(engine, uid, Op.supersede(lisbon, "Lives in Porto"), 5, 2)
    assert moved.op == "SUPERSEDE"
    # A correction is decided now, whenever the belief it names was said.
    fixed = await engine.correct(
        uid, moved.belief_id, "Lives in Braga", provenance=Provenance(observed_at=at(1))
    )
    assert fixed.changes[0].op == "CORRECT"
    assert [b.content for b in await engine.history(uid, include_inactive=False)] == [
        "Lives in Braga"
    ]
