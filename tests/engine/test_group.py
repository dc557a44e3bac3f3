"""A group write: several users' batches in one transaction, exactly as one by one."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from sqlalchemy import text

from mem01session.db import Database
from mem01session.embeddings import HashingEmbedder
from mem01session.engine import BeliefEngine, Utterance
from mem01session.engine.ops import Op, Provenance
from mem01session.engine.tx import Tx
from mem01session.engine.write import Prepared
from mem01session.errors import ConfigError, InvalidOpError, UserErasedError

from .dbstate import counts

NOW = datetime(2026, 3, 4, 12, 0, tzinfo=UTC)
MONDAY = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
SUNDAY = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


def fixed() -> datetime:
    return NOW


@pytest.fixture
async def engine(db: Database, embedder: HashingEmbedder) -> AsyncIterator[BeliefEngine]:
    engine = BeliefEngine(db, embedder, clock=fixed)
    await engine.apply("warm-up", [], provenance=Provenance())  # the pool knows the server
    yield engine


def said(job: int, session: str) -> Provenance:
    return Provenance(session_id=session, job_id=job, observed_at=MONDAY, extractor="test")


def words(text_: str) -> list[Utterance]:
    return [Utterance(0, "user", text_, "item-1"), Utterance(1, "assistant", "Noted.")]


async def seed(engine: BeliefEngine, user: str) -> int:
    """The user's belief a batch then supersedes (holding since before the batch's turn: a
    turn said before it would only add to its history, engine/late.py)."""
    [change] = (
        await engine.apply(
            user,
            [Op.add("Lives in New York", key="home.city", valid_from=SUNDAY)],
            provenance=Provenance(),
        )
    ).changes
    return change.belief_id


async def batches(engine: BeliefEngine, users: list[str], job: int) -> list[Prepared]:
    """For each user: a move (SUPERSEDE of the seeded belief), a new fact, and the turn."""
    out = []
    for i, user in enumerate(users):
        home = await seed(engine, user)
        ops = [
            Op.supersede(home, f"Lives in city {i}", evidence="I moved"),
            Op.add(f"Works as a nurse {i}", evidence="I moved"),
        ]
        out.append(
            await engine.prepare(
                user,
                ops,
                provenance=said(job + i, f"conv-{i}"),
                utterances=words(f"I moved to city {i} and I work as a nurse {i}"),
            )
        )
    return out


async def state(engine: BeliefEngine, user: str) -> dict[str, Any]:
    """What a user's memory holds, without ids or row order (which differ by design)."""
    queries = {
        "beliefs": "SELECT content, key, status, confidence, version, valid_from, valid_to, "
        "superseded_by IS NOT NULL AS replaced FROM beliefs WHERE user_id = :u",
        "ledger": "SELECT op, after->>'content', before->>'content', reason "
        "FROM belief_events WHERE user_id = :u",
        "sources": "SELECT b.content, s.evidence, e.content FROM belief_sources s "
        "JOIN beliefs b ON b.user_id = s.user_id AND b.id = s.belief_id "
        "LEFT JOIN episodes e ON e.user_id = s.user_id AND e.id = s.episode_id "
        "WHERE s.user_id = :u",
        "episodes": "SELECT session_id, role, content, said_at FROM episodes WHERE user_id = :u",
        "belief_terms": "SELECT lexeme, beliefs FROM belief_terms WHERE user_id = :u",
        "episode_terms": "SELECT lexeme, episodes FROM episode_terms WHERE user_id = :u",
        "user": "SELECT version, episodes, active_beliefs FROM memory_users WHERE user_id = :u",
        "twins": "SELECT count(*) FROM belief_twins WHERE user_id = :u",
    }
    out: dict[str, Any] = {}
    async with engine.db.sa_engine.connect() as conn:
        for name, sql in queries.items():
            rows = (await conn.execute(text(sql), {"u": user})).all()
            out[name] = sorted(tuple(str(v) for v in row) for row in rows)
    return out


async def test_a_group_writes_what_one_by_one_writes(engine: BeliefEngine) -> None:
    grouped, alone = ["g-0", "g-1", "g-2"], ["a-0", "a-1", "a-2"]
    group = await batches(engine, grouped, job=100)
    singles = await batches(engine, alone, job=200)

    results = await engine.apply_group(group)
    single_results = [(await engine.apply_group([b]))[0] for b in singles]

    assert [[c.op for c in r.changes] for r in results] == [["SUPERSEDE", "ADD"]] * 3
    assert [r.user_version for r in results] == [r.user_version for r in single_results]
    for g, a in zip(grouped, alone, strict=True):
        assert await state(engine, g) == await state(engine, a)
    # Each user's memory is their own: one seed, one successor, one new fact.
    assert (await counts(engine, "g-1"))["beliefs"] == 3


async def test_an_erased_user_fails_the_whole_group(engine: BeliefEngine) -> None:
    users = ["e-0", "e-1"]
    group = await batches(engine, users, job=300)
    await engine.erase_user("e-1")
    before = await counts(engine, "e-0")

    with pytest.raises(UserErasedError):
        await engine.apply_group(group)

    assert await counts(engine, "e-0") == before  # the other user's turn rolled back too


async def test_a_missing_target_fails_the_whole_group(engine: BeliefEngine) -> None:
    [good] = await batches(engine, ["t-0"], job=400)
    other = await seed(engine, "t-1")
    bad = await engine.prepare(
        "t-1", [Op.supersede(other + 10_000, "Lives in Lima")], provenance=Provenance()
    )
    before = await counts(engine, "t-0")

    with pytest.raises(InvalidOpError, match="does not exist"):
        await engine.apply_group([good, bad])

    assert await counts(engine, "t-0") == before


async def test_the_hook_runs_in_the_groups_transaction(engine: BeliefEngine) -> None:
    group = await batches(engine, ["h-0", "h-1"], job=500)

    async def refuse(tx: Tx) -> None:
        raise RuntimeError("the jobs were taken back")

    with pytest.raises(RuntimeError, match="taken back"):
        await engine.apply_group(group, refuse)
    assert (await counts(engine, "h-0"))["episodes"] == 0

    seen: list[int] = []

    async def look(tx: Tx) -> None:
        row = await tx.one("SELECT count(*) AS n FROM episodes WHERE user_id = 'h-1'", {})
        seen.append(int(row["n"]))

    await engine.apply_group(group, look)
    assert seen == [1]  # the hook saw the group's own writes


async def test_one_user_twice_in_a_group_is_refused(engine: BeliefEngine) -> None:
    [one] = await batches(engine, ["d-0"], job=600)
    with pytest.raises(ConfigError, match="one batch per user"):
        await engine.apply_group([one, one])
    assert (await counts(engine, "d-0"))["episodes"] == 0


async def test_groups_over_the_same_users_in_any_order_never_deadlock(
    engine: BeliefEngine, db_url: str, embedder: HashingEmbedder
) -> None:
    other_db = await Database.open(
        url=db_url, embedding_model=embedder.name, embedding_dim=embedder.dim
    )
    try:
        other = BeliefEngine(other_db, embedder, clock=fixed)
        users = [f"x-{i}" for i in range(6)]
        for u in users:
            await seed(engine, u)
        rounds = []
        for r in range(5):
            forward = [
                await engine.prepare(u, [Op.add(f"Fact {r}")], provenance=Provenance())
                for u in users
            ]
            backward = [
                await other.prepare(u, [Op.add(f"Other {r}")], provenance=Provenance())
                for u in reversed(users)
            ]
            rounds.append(asyncio.gather(engine.apply_group(forward), other.apply_group(backward)))
        await asyncio.gather(*rounds)  # a deadlock would fail one of them
    finally:
        await other_db.close()
    assert (await counts(engine, "x-3"))["beliefs"] == 11


async def test_each_users_zone_is_recorded_with_their_turn(engine: BeliefEngine) -> None:
    """A turn stamped in the user's zone (their session's ``timezone``) records it, in a
    group as one by one; a turn stamped in UTC says nothing of it and changes nothing."""
    lisbon, tokyo = ZoneInfo("Europe/Lisbon"), ZoneInfo("Asia/Tokyo")

    def turn(user: str, job: int, zone: Any) -> Awaitable[Prepared]:
        prov = Provenance(
            session_id="z", job_id=job, observed_at=MONDAY.astimezone(zone), extractor="t"
        )
        return engine.prepare(user, [], provenance=prov, utterances=words(f"Hello {job}"))

    await engine.apply_group([await turn("zu-1", 901, lisbon), await turn("zu-2", 902, tokyo)])
    assert await engine.user_timezone("zu-1") == "Europe/Lisbon"
    assert await engine.user_timezone("zu-2") == "Asia/Tokyo"
    await engine.apply_group([await turn("zu-1", 903, UTC), await turn("zu-2", 904, UTC)])
    await engine.apply_group([await turn("zu-1", 905, UTC)])  # one user: the single path
    assert await engine.user_timezone("zu-1") == "Europe/Lisbon"
    await engine.apply_group([await turn("zu-1", 906, tokyo)])
    assert await engine.user_timezone("zu-1") == "Asia/Tokyo"  # travelled
    summary = await engine.user("zu-1")
    assert summary is not None and summary.timezone == "Asia/Tokyo"
    assert await engine.user_timezone("nobody") is None
    # Where the user lives is theirs: erasing them forgets it with the rest.
    await engine.erase_user("zu-2")
    assert await engine.user_timezone("zu-2") is None


async def test_a_recorded_zone_this_machine_does_not_know_reads_as_none(
    engine: BeliefEngine, db: Database
) -> None:
    """Recorded where the time zone database is newer (or written by hand): a read then
    dates in UTC rather than failing."""
    await engine.apply("zu-3", [Op.add("Likes tea")], provenance=Provenance())
    async with db.sa_engine.begin() as conn:
        await conn.execute(
            text("UPDATE memory_users SET timezone = 'Mars/Olympus_Mons' WHERE user_id = 'zu-3'")
        )
    assert await engine.user_timezone("zu-3") is None
    summary = await engine.user("zu-3")
    assert summary is not None and summary.timezone is None
