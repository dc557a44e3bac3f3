"""Per-user serialization, versions and the transaction hook."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from mem01session.db import Database
from mem01session.embeddings import HashingEmbedder
from mem01session.engine import BeliefEngine
from mem01session.engine.ops import Op, Provenance
from mem01session.engine.records import ApplyResult
from mem01session.engine.users import lock_user
from mem01session.errors import InvalidOpError

from .conftest import TickingClock
from .dbstate import counts, table_rows

U = "alice"
PROV = Provenance(session_id="s1", extractor="test")


@pytest.fixture
async def other_engine(
    db_url: str, embedder: HashingEmbedder, clock: TickingClock
) -> AsyncIterator[BeliefEngine]:
    """A second engine with its own connection pool, like another process."""
    database = await Database.open(
        url=db_url, embedding_model=embedder.name, embedding_dim=embedder.dim
    )
    yield BeliefEngine(database, embedder, clock=clock)
    await database.close()


async def test_twenty_concurrent_batches_for_one_user(
    engine: BeliefEngine, other_engine: BeliefEngine
) -> None:
    [seed] = (
        await engine.apply(U, [Op.add("Lives in Paris", key="city")], provenance=PROV)
    ).changes
    paris = seed.belief_id
    batches: list[list[Op]] = []
    for i in range(20):
        ops = [Op.add("Likes green tea", evidence=f"batch {i}")]
        if i % 4 == 0:  # five batches race to replace the same belief
            ops.append(Op.supersede(paris, f"Lives in city {i}"))
        else:
            ops.append(Op.add(f"Fact {i % 3}"))
        batches.append(ops)

    results = await asyncio.gather(
        *(
            (engine if i % 2 else other_engine).apply(U, ops, provenance=PROV)
            for i, ops in enumerate(batches)
        ),
        return_exceptions=True,
    )

    applied = [r for r in results if isinstance(r, ApplyResult)]
    rejected = [r for r in results if not isinstance(r, ApplyResult)]
    assert len(applied) == 16 and len(rejected) == 4  # one SUPERSEDE wins, four find it gone
    for exc in rejected:
        assert isinstance(exc, InvalidOpError)
        assert exc.index == 1 and "is superseded, not active" in exc.reason

    async with engine.db.sa_engine.connect() as conn:
        dupes = (
            await conn.execute(
                text(
                    "SELECT norm_content FROM beliefs WHERE user_id = :u AND status = 'active' "
                    "GROUP BY norm_content HAVING count(*) > 1"
                ),
                {"u": U},
            )
        ).all()
        cities = await conn.scalar(
            text(
                "SELECT count(*) FROM beliefs WHERE user_id = :u AND key = 'city' "
                "AND status = 'active'"
            ),
            {"u": U},
        )
    assert dupes == []
    assert cities == 1
    active = sorted(b.content for b in await engine.history(U, include_inactive=False))
    assert active[:3] == ["Fact 0", "Fact 1", "Fact 2"]
    assert "Likes green tea" in active and len(active) == 5

    ledger = await engine.ledger(U, limit=1000)
    assert len(ledger) == 1 + sum(len(r.changes) for r in applied)
    tea = next(b for b in await engine.history(U) if b.content == "Likes green tea")
    tea_ops = Counter(e.op for e in ledger if e.belief_id == tea.id)
    assert tea_ops == {"ADD": 1, "CONFIRM": 15}
    assert len(tea.sources) == 16

    assert sorted(r.user_version for r in applied) == list(range(2, 18))
    assert await engine.user_version(U) == 17


async def test_version_counts_applied_batches_only(engine: BeliefEngine) -> None:
    assert await engine.user_version(U) == 0
    assert (await engine.apply(U, [Op.add("Likes tea")], provenance=PROV)).user_version == 1
    assert (await engine.apply(U, [Op.add("Likes jazz")], provenance=PROV)).user_version == 2
    with pytest.raises(InvalidOpError):
        await engine.apply(U, [Op.add("")], provenance=PROV)
    empty = await engine.apply(U, [], provenance=PROV)
    assert empty == ApplyResult((), 2)
    assert await engine.user_version(U) == 2
    assert await engine.user_version("nobody") == 0


async def test_a_failing_hook_rolls_the_batch_back(engine: BeliefEngine) -> None:
    await engine.apply(U, [Op.add("Likes tea")], provenance=PROV)
    before = await table_rows(engine)
    boom = RuntimeError("job bookkeeping failed")

    async def hook(conn: AsyncConnection) -> None:
        seen = await conn.scalar(text("SELECT count(*) FROM beliefs WHERE user_id = :u"), {"u": U})
        assert seen == 2  # the hook runs after the ops, in their transaction
        raise boom

    with pytest.raises(RuntimeError) as info:
        await engine.apply(U, [Op.add("Plays chess")], provenance=PROV, hook=hook)
    assert info.value is boom
    assert await table_rows(engine) == before
    assert await engine.user_version(U) == 1


async def test_hook_writes_commit_with_the_batch(engine: BeliefEngine) -> None:
    async def hook(conn: AsyncConnection) -> None:
        await conn.execute(
            text(
                "INSERT INTO memory_jobs (user_id, session_id, payload, status, idempotency_key) "
                "VALUES (:u, 's1', '{}', 'done', 'turn-1')"
            ),
            {"u": U},
        )

    await engine.apply(U, [Op.add("Plays chess")], provenance=PROV, hook=hook)
    assert (await counts(engine, U))["memory_jobs"] == 1

    calls: list[int] = []

    async def counting_hook(conn: AsyncConnection) -> None:
        calls.append(1)

    await engine.apply(U, [], provenance=PROV, hook=counting_hook)
    assert calls == [1]  # an empty batch still runs the hook (a job with nothing to apply)


async def test_other_users_do_not_wait_for_a_held_lock(engine: BeliefEngine) -> None:
    async with engine.db.sa_engine.connect() as holder, holder.begin():
        await lock_user(holder, U)
        result = await asyncio.wait_for(
            engine.apply("bob", [Op.add("Likes jazz")], provenance=PROV), timeout=30
        )
        assert result.user_version == 1
        async with engine.db.sa_engine.connect() as probe:
            taken = "SELECT pg_try_advisory_xact_lock(hashtextextended('mem01:user:' || :u, 0))"
            assert await probe.scalar(text(taken), {"u": U}) is False
            assert await probe.scalar(text(taken), {"u": "bob"}) is True
