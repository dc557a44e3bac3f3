"""Inspection: get, history and ledger show the whole lifecycle, user by user."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from mem01session.db import Database
from mem01session.embeddings import HashingEmbedder
from mem01session.engine import BeliefEngine
from mem01session.engine.ops import Op, Provenance
from mem01session.errors import BeliefNotFoundError, ConfigError

from .conftest import TickingClock

pytestmark = pytest.mark.asyncio(loop_scope="module")

PROV = Provenance(session_id="s1", extractor="test")


@pytest.fixture
def engine(module_db: Database, embedder: HashingEmbedder, clock: TickingClock) -> BeliefEngine:
    """All tests here share one database; each works as its own user (``uid``)."""
    return BeliefEngine(module_db, embedder, clock=clock)


def at(day: int) -> datetime:
    return datetime(2026, 1, day, tzinfo=UTC)


async def lifecycle(engine: BeliefEngine, uid: str) -> dict[str, int]:
    """Paris (day 1) superseded by Rome (day 5); tea (day 2) invalidated; jazz (day 3)."""
    r = await engine.apply(
        uid,
        [
            Op.add("Lives in Paris", key="city", valid_from=at(1)),
            Op.add("Likes tea", valid_from=at(2), evidence="I love tea"),
            Op.add("Likes jazz", valid_from=at(3)),
        ],
        provenance=PROV,
    )
    paris, tea, jazz = (c.belief_id for c in r.changes)
    r = await engine.apply(
        uid,
        [Op.supersede(paris, "Lives in Rome", valid_from=at(5)), Op.invalidate(tea, "gave up")],
        provenance=Provenance(session_id="s2", observed_at=at(6)),
    )
    return {"paris": paris, "tea": tea, "jazz": jazz, "rome": r.changes[0].belief_id}


async def test_history_is_chronological_and_keeps_retired_text(
    engine: BeliefEngine, uid: str
) -> None:
    ids = await lifecycle(engine, uid)
    timeline = await engine.history(uid)
    assert [(b.content, b.status) for b in timeline] == [
        ("Lives in Paris", "superseded"),
        ("Likes tea", "invalidated"),
        ("Likes jazz", "active"),
        ("Lives in Rome", "active"),
    ]
    paris, tea = timeline[0], timeline[1]
    assert (paris.valid_from, paris.valid_to, paris.superseded_by) == (at(1), at(5), ids["rome"])
    assert tea.valid_to == at(6)  # the invalidation's observed time
    assert tea.sources[0].evidence == "I love tea"
    assert all(b.sources for b in timeline)

    current = await engine.history(uid, include_inactive=False)
    assert [b.content for b in current] == ["Likes jazz", "Lives in Rome"]


async def test_history_limit_keeps_the_most_recent(engine: BeliefEngine, uid: str) -> None:
    await lifecycle(engine, uid)
    assert [b.content for b in await engine.history(uid, limit=2)] == [
        "Likes jazz",
        "Lives in Rome",
    ]
    with pytest.raises(ConfigError, match="limit"):
        await engine.history(uid, limit=0)


async def test_ledger_is_oldest_first_and_filterable(engine: BeliefEngine, uid: str) -> None:
    ids = await lifecycle(engine, uid)
    events = await engine.ledger(uid)
    assert [(e.op, e.belief_id) for e in events] == [
        ("ADD", ids["paris"]),
        ("ADD", ids["tea"]),
        ("ADD", ids["jazz"]),
        ("SUPERSEDE", ids["rome"]),
        ("INVALIDATE", ids["tea"]),
    ]
    assert [e.id for e in events] == sorted(e.id for e in events)
    assert events[-1].reason == "gave up"

    paris_events = await engine.ledger(uid, belief_id=ids["paris"])
    assert [e.op for e in paris_events] == ["ADD", "SUPERSEDE"]  # as subject, then as related
    assert [e.op for e in await engine.ledger(uid, limit=1)] == ["INVALIDATE"]


async def test_get_returns_any_status_with_sources_oldest_first(
    engine: BeliefEngine, uid: str
) -> None:
    ids = await lifecycle(engine, uid)
    await engine.apply(
        uid,
        [Op.add("likes jazz", evidence="jazz again")],
        provenance=Provenance(session_id="s3", observed_at=at(9)),
    )
    jazz = await engine.get(uid, ids["jazz"])
    # s1 was observed at the engine clock (March); s3 claims January: observed time wins.
    assert [s.session_id for s in jazz.sources] == ["s3", "s1"]
    assert jazz.sources[0].observed_at == at(9)
    assert (await engine.get(uid, ids["paris"])).status == "superseded"


async def test_nothing_crosses_users(engine: BeliefEngine, uid: str) -> None:
    ids = await lifecycle(engine, uid)
    other = uid + "-other"
    await engine.apply(other, [Op.add("Likes opera")], provenance=PROV)
    for belief_id in ids.values():
        with pytest.raises(BeliefNotFoundError, match="does not exist"):
            await engine.get(other, belief_id)
    assert [b.content for b in await engine.history(other)] == ["Likes opera"]
    assert [e.op for e in await engine.ledger(other)] == ["ADD"]
    assert await engine.ledger(other, belief_id=ids["paris"]) == []


@pytest.mark.parametrize("bad", [0, -1, 10**30, "1", True])
async def test_get_unknown_ids(engine: BeliefEngine, uid: str, bad: object) -> None:
    with pytest.raises(BeliefNotFoundError):
        await engine.get(uid, bad)  # type: ignore[arg-type]


async def test_history_filters_by_text_ignoring_case(engine: BeliefEngine, uid: str) -> None:
    await lifecycle(engine, uid)
    assert [b.content for b in await engine.history(uid, contains="LIVES in")] == [
        "Lives in Paris",
        "Lives in Rome",
    ]
    current = await engine.history(uid, include_inactive=False, contains="lives")
    assert [b.content for b in current] == ["Lives in Rome"]
    # Wildcards are plain text; a blank filter is no filter.
    assert await engine.history(uid, contains="%") == []
    assert await engine.history(uid, contains="_") == []
    assert len(await engine.history(uid, contains="  ")) == 4
    with pytest.raises(ConfigError, match="contains"):
        await engine.history(uid, contains="\ud800")


async def test_users_list_counts_each_users_beliefs(engine: BeliefEngine, uid: str) -> None:
    await lifecycle(engine, uid)
    other = uid + "-other"
    await engine.apply(other, [Op.add("Likes opera")], provenance=PROV)
    await engine.erase_user(other)

    listed = await engine.users(contains=uid.upper())
    assert [u.user_id for u in listed] == [other, uid]  # most recently changed first
    erased, mine = listed
    assert (erased.erased, erased.total, erased.beliefs) == (True, 0, {})
    assert not mine.erased
    assert mine.beliefs == {"active": 2, "superseded": 1, "invalidated": 1}
    assert (mine.active, mine.total, mine.version) == (2, 4, 2)
    assert mine.updated_at >= mine.created_at
    assert [u.user_id for u in await engine.users(contains=uid, limit=1)] == [other]

    assert await engine.user(uid) == mine
    assert await engine.user(uid + "-nobody") is None
    with pytest.raises(ConfigError, match="limit"):
        await engine.users(limit=0)
