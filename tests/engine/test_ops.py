"""Each lifecycle op: what it writes to beliefs, the ledger and provenance."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from mem01session.db import Database
from mem01session.embeddings import HashingEmbedder
from mem01session.engine import BeliefEngine
from mem01session.engine.ops import MAX_EVIDENCE_CHARS, Op, Provenance
from mem01session.engine.records import Change
from mem01session.errors import BeliefNotFoundError, InvalidOpError

from .conftest import TickingClock
from .dbstate import belief_column, counts


@pytest.fixture
def engine(module_db: Database, embedder: HashingEmbedder, clock: TickingClock) -> BeliefEngine:
    """All tests here share one database; each works as its own user (``uid``)."""
    return BeliefEngine(module_db, embedder, clock=clock)


pytestmark = pytest.mark.asyncio(loop_scope="module")

PROV = Provenance(session_id="s1", item_ref="turn-1", extractor="test", job_id=7)


async def add(engine: BeliefEngine, uid: str, content: str, **kw: object) -> int:
    result = await engine.apply(uid, [Op.add(content, **kw)], provenance=PROV)  # type: ignore[arg-type]
    return result.changes[0].belief_id


async def test_add_creates_active_belief_with_source_and_ledger(
    engine: BeliefEngine, uid: str, embedder: HashingEmbedder
) -> None:
    observed = datetime(2026, 2, 1, tzinfo=UTC)
    prov = Provenance(session_id="s1", item_ref="t1", observed_at=observed, extractor="x", job_id=3)
    result = await engine.apply(
        uid,
        [Op.add("Lives in Paris", key="city", confidence=0.9, evidence="I live in Paris")],
        provenance=prov,
    )
    [change] = result.changes
    assert change.op == "ADD" and change.replaced == ()
    assert result.user_version == 1

    belief = await engine.get(uid, change.belief_id)
    assert (belief.content, belief.key, belief.status) == ("Lives in Paris", "city", "active")
    assert belief.confidence == pytest.approx(0.9)
    assert belief.version == 1 and belief.valid_to is None
    assert belief.valid_from == observed  # from provenance, not the clock
    [source] = belief.sources
    assert (source.session_id, source.item_ref, source.evidence) == ("s1", "t1", "I live in Paris")
    assert (source.observed_at, source.extractor, source.job_id) == (observed, "x", 3)

    stored = await belief_column(engine, uid, change.belief_id, "CAST(embedding AS text)")
    [vec] = await embedder.embed(["Lives in Paris"])
    assert [float(x) for x in stored.strip("[]").split(",")] == pytest.approx(vec, abs=1e-6)
    assert await belief_column(engine, uid, change.belief_id, "norm_content") == "lives in paris"

    [event] = await engine.ledger(uid)
    assert (event.op, event.belief_id, event.before, event.job_id) == (
        "ADD",
        change.belief_id,
        None,
        3,
    )
    assert event.after is not None and event.after["content"] == "Lives in Paris"


async def test_add_defaults(engine: BeliefEngine, uid: str) -> None:
    belief = await engine.get(uid, await add(engine, uid, "  Drinks coffee  "))
    assert belief.content == "Drinks coffee"  # stripped
    assert belief.confidence == pytest.approx(0.8)
    assert belief.valid_from == belief.created_at  # no observed_at: the engine clock
    assert belief.valid_from.year == 2026


async def test_op_valid_from_wins(engine: BeliefEngine, uid: str) -> None:
    since = datetime(2020, 5, 1, tzinfo=UTC)
    belief = await engine.get(uid, await add(engine, uid, "Plays chess", valid_from=since))
    assert belief.valid_from == since


async def test_restating_an_active_belief_confirms_it(engine: BeliefEngine, uid: str) -> None:
    first = await add(engine, uid, "Lives in Paris", confidence=0.6)
    before = await engine.get(uid, first)
    result = await engine.apply(
        uid, [Op.add("lives in   paris.", evidence="still in Paris")], provenance=PROV
    )
    assert result.changes == (Change("CONFIRM", first),)
    after = await engine.get(uid, first)
    assert after.confidence > before.confidence
    assert after.last_confirmed_at is not None and after.content == "Lives in Paris"
    assert [s.evidence for s in after.sources] == [None, "still in Paris"]
    assert (await counts(engine, uid))["beliefs"] == 1
    assert [e.op for e in await engine.ledger(uid)] == ["ADD", "CONFIRM"]
    assert result.user_version == 2


async def test_confirmation_caps_confidence_at_one(engine: BeliefEngine, uid: str) -> None:
    first = await add(engine, uid, "Likes tea", confidence=1.0)
    await add(engine, uid, "Likes tea", confidence=1.0)
    assert (await engine.get(uid, first)).confidence == 1.0


async def test_add_matching_a_retired_belief_creates_a_new_one(
    engine: BeliefEngine, uid: str
) -> None:
    first = await add(engine, uid, "Likes tea")
    await engine.apply(uid, [Op.invalidate(first, "stopped")], provenance=PROV)
    second = await add(engine, uid, "Likes tea")
    assert second != first
    assert (await engine.get(uid, second)).status == "active"


async def test_two_equal_adds_in_one_batch_make_one_belief(engine: BeliefEngine, uid: str) -> None:
    result = await engine.apply(uid, [Op.add("Likes tea"), Op.add("likes tea!")], provenance=PROV)
    assert [c.op for c in result.changes] == ["ADD", "CONFIRM"]
    assert result.changes[0].belief_id == result.changes[1].belief_id


async def test_update_revises_in_place(engine: BeliefEngine, uid: str) -> None:
    bid = await add(engine, uid, "Works at Acme", key="job")
    old_vec = await belief_column(engine, uid, bid, "CAST(embedding AS text)")
    result = await engine.apply(
        uid, [Op.update(bid, "Works at Acme Labs", evidence="it's Acme Labs")], provenance=PROV
    )
    assert result.changes == (Change("UPDATE", bid),)
    belief = await engine.get(uid, bid)
    assert (belief.content, belief.version, belief.status, belief.key) == (
        "Works at Acme Labs",
        2,
        "active",
        "job",
    )
    assert belief.updated_at > belief.created_at
    assert await belief_column(engine, uid, bid, "norm_content") == "works at acme labs"
    assert await belief_column(engine, uid, bid, "CAST(embedding AS text)") != old_vec
    assert [s.evidence for s in belief.sources] == [None, "it's Acme Labs"]
    event = (await engine.ledger(uid))[-1]
    assert event.op == "UPDATE" and event.before is not None and event.after is not None
    assert (event.before["content"], event.before["version"]) == ("Works at Acme", 1)
    assert (event.after["content"], event.after["version"]) == ("Works at Acme Labs", 2)


async def test_update_confidence_only_keeps_text_and_vector(engine: BeliefEngine, uid: str) -> None:
    bid = await add(engine, uid, "Works at Acme")
    vec = await belief_column(engine, uid, bid, "CAST(embedding AS text)")
    await engine.apply(uid, [Op.update(bid, confidence=0.3)], provenance=PROV)
    belief = await engine.get(uid, bid)
    assert (belief.content, belief.version) == ("Works at Acme", 2)
    assert belief.confidence == pytest.approx(0.3)
    assert await belief_column(engine, uid, bid, "CAST(embedding AS text)") == vec


async def test_update_onto_another_active_statement_is_rejected(
    engine: BeliefEngine, uid: str
) -> None:
    a = await add(engine, uid, "Likes tea")
    b = await add(engine, uid, "Likes coffee")
    with pytest.raises(InvalidOpError, match=f"restates active belief #{a}"):
        await engine.apply(uid, [Op.update(b, "Likes tea")], provenance=PROV)
    assert (await engine.get(uid, b)).content == "Likes coffee"


async def test_supersede_replaces_and_keeps_old_text(engine: BeliefEngine, uid: str) -> None:
    old = await add(engine, uid, "Lives in Paris", key="city", confidence=0.9)
    moved = datetime(2026, 3, 5, tzinfo=UTC)
    result = await engine.apply(
        uid,
        [Op.supersede(old, "Lives in Berlin", evidence="moved to Berlin", valid_from=moved)],
        provenance=PROV,
    )
    [change] = result.changes
    assert change.op == "SUPERSEDE" and change.replaced == (old,) and change.belief_id != old
    new = await engine.get(uid, change.belief_id)
    assert (new.content, new.key, new.status, new.valid_from) == (
        "Lives in Berlin",
        "city",
        "active",
        moved,
    )
    assert new.confidence == pytest.approx(0.8)  # a new statement, not the old confidence
    gone = await engine.get(uid, old)
    assert (gone.content, gone.status, gone.superseded_by) == (
        "Lives in Paris",
        "superseded",
        new.id,
    )
    assert gone.valid_to == moved
    assert new.sources[0].evidence == "moved to Berlin"
    event = (await engine.ledger(uid))[-1]
    assert (event.op, event.belief_id, event.related_ids) == ("SUPERSEDE", new.id, (old,))
    assert event.before is not None and event.before["content"] == "Lives in Paris"


async def test_supersede_with_explicit_key(engine: BeliefEngine, uid: str) -> None:
    old = await add(engine, uid, "Lives in Paris", key="city")
    [change] = (
        await engine.apply(uid, [Op.supersede(old, "Has a flat", key="home")], provenance=PROV)
    ).changes
    assert (await engine.get(uid, change.belief_id)).key == "home"


async def test_valid_to_never_precedes_valid_from(engine: BeliefEngine, uid: str) -> None:
    old = await add(engine, uid, "Lives in Paris", valid_from=datetime(2025, 1, 1, tzinfo=UTC))
    early = datetime(2024, 1, 1, tzinfo=UTC)
    await engine.apply(uid, [Op.supersede(old, "Lives in Rome", valid_from=early)], provenance=PROV)
    gone = await engine.get(uid, old)
    assert gone.valid_to is not None and gone.valid_to >= gone.valid_from
    # The successor starts where the old belief ended: the two never overlap.
    [rome] = await engine.history(uid, include_inactive=False)
    assert rome.valid_from == gone.valid_to == gone.valid_from


async def test_invalidate_takes_when_it_stopped_holding(engine: BeliefEngine, uid: str) -> None:
    since, moved = datetime(2025, 1, 1, tzinfo=UTC), datetime(2025, 6, 1, tzinfo=UTC)
    rent = await add(engine, uid, "Pays $900 a month in rent", valid_from=since)
    await engine.apply(uid, [Op.invalidate(rent, "moved", valid_to=moved)], provenance=PROV)
    gone = await engine.get(uid, rent)
    assert (gone.status, gone.valid_from, gone.valid_to) == ("invalidated", since, moved)


async def test_supersede_onto_an_existing_statement_reuses_it(
    engine: BeliefEngine, uid: str
) -> None:
    paris = await add(engine, uid, "Lives in Paris")
    berlin = await add(engine, uid, "Lives in Berlin")
    result = await engine.apply(uid, [Op.supersede(paris, "lives in berlin")], provenance=PROV)
    assert result.changes == (Change("SUPERSEDE", berlin, (paris,)),)
    assert (await engine.get(uid, paris)).superseded_by == berlin
    assert [b.id for b in await engine.history(uid, include_inactive=False)] == [berlin]
    assert (await engine.get(uid, berlin)).last_confirmed_at is not None


async def test_invalidate_keeps_text_and_sets_valid_to(engine: BeliefEngine, uid: str) -> None:
    bid = await add(engine, uid, "Is vegetarian")
    result = await engine.apply(
        uid, [Op.invalidate(bid, "eats fish now", evidence="I eat fish now")], provenance=PROV
    )
    assert result.changes == (Change("INVALIDATE", bid, (bid,)),)
    belief = await engine.get(uid, bid)
    assert (belief.content, belief.status) == ("Is vegetarian", "invalidated")
    assert belief.valid_to is not None
    event = (await engine.ledger(uid))[-1]
    assert (event.op, event.reason) == ("INVALIDATE", "eats fish now")
    assert event.after is not None and event.after["status"] == "invalidated"
    assert event.after["evidence"] == "I eat fish now"
    assert event.before is not None and event.before["status"] == "active"


async def test_merge_collapses_duplicates_and_carries_provenance(
    engine: BeliefEngine, uid: str
) -> None:
    a = await engine.apply(
        uid,
        [Op.add("Has a dog", key="pet", confidence=0.7, evidence="my dog")],
        provenance=Provenance(session_id="s-a"),
    )
    b = await engine.apply(
        uid,
        [Op.add("Owns a dog named Rex", confidence=0.9, evidence="Rex")],
        provenance=Provenance(session_id="s-b"),
    )
    ids = (a.changes[0].belief_id, b.changes[0].belief_id)
    result = await engine.apply(
        uid, [Op.merge(ids, "Has a dog named Rex", evidence="Rex the dog")], provenance=PROV
    )
    [change] = result.changes
    assert change.op == "MERGE" and change.replaced == ids
    canon = await engine.get(uid, change.belief_id)
    assert (canon.content, canon.status, canon.key) == ("Has a dog named Rex", "active", "pet")
    assert canon.confidence == pytest.approx(0.9)
    assert sorted(s.session_id or "" for s in canon.sources) == ["s-a", "s-b", "s1"]
    for source_id in ids:
        src = await engine.get(uid, source_id)
        assert (src.status, src.merged_into) == ("merged", canon.id)
        assert src.valid_to is not None and len(src.sources) == 1  # copied, not moved
    event = (await engine.ledger(uid))[-1]
    assert (event.op, event.belief_id, event.related_ids) == ("MERGE", canon.id, ids)
    assert event.before is not None
    assert [s["content"] for s in event.before["sources"]] == ["Has a dog", "Owns a dog named Rex"]  # type: ignore[attr-defined]


async def test_merge_into_an_existing_statement(engine: BeliefEngine, uid: str) -> None:
    a = await add(engine, uid, "Has a dog")
    b = await add(engine, uid, "Owns a dog")
    keeper = await add(engine, uid, "Has a dog named Rex")
    result = await engine.apply(uid, [Op.merge([a, b], "has a dog named rex")], provenance=PROV)
    assert result.changes == (Change("MERGE", keeper, (a, b)),)
    assert len(await engine.history(uid, include_inactive=False)) == 1
    assert len((await engine.get(uid, keeper)).sources) == 4  # own, a's, b's, this batch's


async def test_every_resulting_belief_has_provenance_and_every_op_a_ledger_row(
    engine: BeliefEngine, uid: str
) -> None:
    a = await add(engine, uid, "Likes tea")
    b = await add(engine, uid, "Likes coffee")
    c = await add(engine, uid, "Lives in Paris")
    d = await add(engine, uid, "Is vegetarian")
    e = await add(engine, uid, "Drinks green tea")
    ops = [
        Op.add("Plays chess"),
        Op.add("Likes coffee"),
        Op.update(b, "Likes espresso"),
        Op.supersede(c, "Lives in Rome"),
        Op.invalidate(d, "no longer"),
        Op.merge([a, e], "Likes tea, green or not"),
    ]
    before = len(await engine.ledger(uid))
    await engine.apply(uid, ops, provenance=PROV)
    assert len(await engine.ledger(uid)) == before + len(ops)
    for belief in await engine.history(uid):
        assert belief.sources, belief


async def test_evidence_is_truncated_not_rejected(engine: BeliefEngine, uid: str) -> None:
    bid = await add(engine, uid, "Likes tea", evidence="x" * (MAX_EVIDENCE_CHARS + 50))
    [source] = (await engine.get(uid, bid)).sources
    assert source.evidence == "x" * MAX_EVIDENCE_CHARS


async def test_correct_is_a_supersede_recorded_as_correct(engine: BeliefEngine, uid: str) -> None:
    old = await add(engine, uid, "Lives in Paris", key="city")
    result = await engine.correct(uid, old, "Lives in Lyon", reason="user said so")
    [change] = result.changes
    assert change.op == "CORRECT" and change.replaced == (old,)
    assert (await engine.get(uid, old)).status == "superseded"
    new = await engine.get(uid, change.belief_id)
    assert (new.content, new.key) == ("Lives in Lyon", "city") and new.sources
    event = (await engine.ledger(uid))[-1]
    assert (event.op, event.reason) == ("CORRECT", "user said so")


async def test_forget_is_an_invalidate_recorded_as_forget(engine: BeliefEngine, uid: str) -> None:
    bid = await add(engine, uid, "Likes tea")
    result = await engine.forget(uid, bid, "asked to forget")
    assert result.changes == (Change("FORGET", bid, (bid,)),)
    assert (await engine.get(uid, bid)).status == "invalidated"
    assert (await engine.ledger(uid))[-1].op == "FORGET"


async def test_the_ledger_names_who_made_each_change(engine: BeliefEngine, uid: str) -> None:
    bid = await add(engine, uid, "Likes tea")
    other = await add(engine, uid, "Lives in Paris")
    inspector = Provenance(extractor="inspector")
    await engine.forget(uid, bid, "wrong", provenance=inspector)
    fixed = await engine.correct(uid, other, "Lives in Lyon", provenance=inspector)
    new = fixed.changes[0].belief_id
    await engine.forget(uid, new, "moved again")  # the default source is kept
    events = await engine.ledger(uid)
    assert [(e.op, e.source) for e in events] == [
        ("ADD", "test"),
        ("ADD", "test"),
        ("FORGET", "inspector"),
        ("CORRECT", "inspector"),
        ("FORGET", "forget"),
    ]
    assert [s.extractor for s in (await engine.get(uid, new)).sources] == ["inspector"]
    assert (await engine.get(uid, bid)).status == "invalidated"


@pytest.mark.parametrize("method", ["correct", "forget"])
async def test_correct_and_forget_need_an_active_belief_of_the_user(
    engine: BeliefEngine, uid: str, method: str
) -> None:
    bid = await add(engine, uid, "Likes tea")
    other = (
        (await engine.apply(uid + "-bob", [Op.add("Likes jazz")], provenance=PROV))
        .changes[0]
        .belief_id
    )
    await engine.forget(uid, bid, "gone")

    async def call(target: int) -> None:
        if method == "correct":
            await engine.correct(uid, target, "Likes green tea")
        else:
            await engine.forget(uid, target, "why not")

    with pytest.raises(BeliefNotFoundError, match="is invalidated, not active"):
        await call(bid)
    with pytest.raises(BeliefNotFoundError, match="does not exist"):
        await call(other)
    with pytest.raises(BeliefNotFoundError, match="does not exist"):
        await call(10_000)
    assert (await engine.get(uid + "-bob", other)).status == "active"


async def test_an_op_sees_what_an_earlier_op_of_its_batch_did_to_its_target(
    engine: BeliefEngine, uid: str
) -> None:
    home = await add(engine, uid, "Lives in Paris", key="city", confidence=0.6)
    result = await engine.apply(
        uid,
        # The restatement confirms the belief (confidence up), then it is replaced.
        [Op.add("Lives in Paris"), Op.supersede(home, "Lives in Rome")],
        provenance=PROV,
    )
    assert [c.op for c in result.changes] == ["CONFIRM", "SUPERSEDE"]
    superseded = [e for e in await engine.ledger(uid) if e.op == "SUPERSEDE"]
    assert superseded[0].before is not None
    # The state the confirmation left, not the one read before the batch began.
    assert superseded[0].before["confidence"] == pytest.approx(0.65)
    old = await engine.get(uid, home)
    assert old is not None and old.status == "superseded"
