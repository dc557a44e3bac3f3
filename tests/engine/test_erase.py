"""Erase: everything durable about the user goes, with a receipt; later writes are refused."""

from __future__ import annotations

from dataclasses import replace

import pytest
from sqlalchemy import text

from mem01session.engine import BeliefEngine, Utterance
from mem01session.engine.ops import Op, Provenance
from mem01session.errors import UserErasedError

from .dbstate import counts, table_rows

U = "alice"
PROV = Provenance(session_id="s1", extractor="test")


async def populate(engine: BeliefEngine, user_id: str) -> None:
    r = await engine.apply(
        user_id,
        [Op.add("Likes tea"), Op.add("Lives in Paris", key="city")],
        provenance=replace(PROV, job_id=1),
        utterances=[Utterance(0, "user", "I like tea. I live in Paris, near the river.")],
    )
    paris = r.changes[1].belief_id
    await engine.apply(user_id, [Op.supersede(paris, "Lives in Rome")], provenance=PROV)
    async with engine.db.sa_engine.begin() as conn:
        await conn.execute(
            text(
                "INSERT INTO memory_jobs (user_id, session_id, payload, idempotency_key) "
                "VALUES (:u, 's1', '{\"text\": \"hi\"}', 'k1'), (:u, 's1', '{}', 'k2')"
            ),
            {"u": user_id},
        )


async def test_erase_deletes_everything_and_returns_counts(engine: BeliefEngine) -> None:
    await populate(engine, U)
    await populate(engine, "bob")
    bob_before = await table_rows(engine, "bob")
    before = await counts(engine, U)
    version = await engine.user_version(U)

    receipt = await engine.erase_user(U)

    assert receipt.user_id == U
    assert receipt.deleted == {
        "beliefs": 3,
        "belief_events": 3,
        "belief_sources": 3,
        "belief_terms": before["belief_terms"],
        "belief_twins": 0,
        "episodes": 1,
        "episode_terms": before["episode_terms"],
        "memory_jobs": 2,
    }
    assert receipt.deleted == {t: before[t] for t in receipt.deleted}
    assert before["belief_terms"] > 0 and before["episode_terms"] > 0
    assert receipt.total == 12 + before["belief_terms"] + before["episode_terms"]
    after = await counts(engine, U)
    assert {t: n for t, n in after.items() if t != "memory_users"} == {
        "beliefs": 0,
        "belief_events": 0,
        "belief_sources": 0,
        "belief_terms": 0,
        "belief_twins": 0,
        "episodes": 0,
        "episode_terms": 0,
        "memory_jobs": 0,
    }
    assert await engine.history(U) == [] and await engine.ledger(U) == []
    assert await engine.episodes(U) == []
    assert (await engine.recall(U, "where do I live? tea?")).text == ""
    assert await table_rows(engine, "bob") == bob_before  # nothing crosses users
    assert await engine.user_version(U) == version + 1  # caches keyed by version go stale

    async with engine.db.sa_engine.connect() as conn:
        erased_at = await conn.scalar(
            text("SELECT erased_at FROM memory_users WHERE user_id = :u"), {"u": U}
        )
    assert erased_at == receipt.erased_at


async def test_writes_are_refused_after_erase_until_reinstated(engine: BeliefEngine) -> None:
    await populate(engine, U)
    receipt = await engine.erase_user(U)
    assert await engine.erased_at(U) == receipt.erased_at
    before = await table_rows(engine, U)
    with pytest.raises(UserErasedError, match="erased"):
        await engine.apply(U, [Op.add("Likes tea")], provenance=PROV)
    with pytest.raises(UserErasedError):
        await engine.apply(U, [], provenance=PROV)
    assert await table_rows(engine, U) == before

    assert await engine.reinstate_user(U) == receipt.erased_at  # the erase it lifted
    assert await engine.erased_at(U) is None
    assert await engine.reinstate_user(U) is None  # nothing left to lift
    result = await engine.apply(U, [Op.add("Likes tea")], provenance=PROV)
    assert result.changes[0].op == "ADD"  # a fresh start, not a confirmation
    assert [b.content for b in await engine.history(U)] == ["Likes tea"]


async def test_erasing_an_unknown_user_leaves_a_tombstone(engine: BeliefEngine) -> None:
    receipt = await engine.erase_user("ghost")
    assert receipt.total == 0
    assert set(receipt.deleted) == {
        "beliefs",
        "belief_events",
        "belief_sources",
        "belief_terms",
        "belief_twins",
        "episodes",
        "episode_terms",
        "memory_jobs",
    }
    with pytest.raises(UserErasedError):
        await engine.apply("ghost", [Op.add("Likes tea")], provenance=PROV)


async def test_erase_without_a_tombstone_leaves_no_trace_of_the_user(
    engine: BeliefEngine,
) -> None:
    """What the demo does with its scratch user: not even the users list names it."""
    await populate(engine, U)
    await populate(engine, "bob")
    bob_before = await table_rows(engine, "bob")
    receipt = await engine.erase_user(U, tombstone=False)
    assert receipt.deleted["memory_users"] == 1 and receipt.deleted["beliefs"] == 3
    assert set((await counts(engine, U)).values()) == {0}
    assert [u.user_id for u in await engine.users()] == ["bob"]
    assert await engine.erased_at(U) is None and await engine.user_version(U) == 0
    assert await table_rows(engine, "bob") == bob_before
    # Nothing refuses the id afterwards: it is a user like any new one.
    await engine.apply(U, [Op.add("Likes tea")], provenance=PROV)
    assert [b.content for b in await engine.history(U)] == ["Likes tea"]


async def test_reinstating_a_user_who_was_never_erased_is_harmless(engine: BeliefEngine) -> None:
    await populate(engine, U)
    before = await table_rows(engine, U)
    assert await engine.reinstate_user(U) is None
    assert await engine.reinstate_user("ghost") is None
    assert await engine.erased_at("ghost") is None
    assert await table_rows(engine, U) == before


async def test_erase_leaves_no_rendered_statement_in_memory(engine: BeliefEngine) -> None:
    from mem01session.engine.lines import record_line  # the renderer's line cache

    await populate(engine, U)
    assert "Likes tea" in (await engine.recall(U, "tea")).text
    assert record_line.cache_info().currsize > 0
    await engine.erase_user(U)
    assert record_line.cache_info().currsize == 0


def _residue(url: str, marker: bytes) -> list[str]:
    """The memory tables (with their TOAST tables and indexes) whose files hold ``marker``:
    read as the server stores them (pg_read_binary_file, a superuser's)."""
    import psycopg

    from mem01session.db.schema import USER_TABLES

    found = []
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CHECKPOINT")  # the pages reach the files
        rows = conn.execute(
            "SELECT c.relname, pg_relation_filepath(c.oid) FROM pg_class c "
            "WHERE c.oid = ANY(SELECT t.oid FROM pg_class t WHERE t.relname = ANY(%(t)s) "
            "UNION SELECT t.reltoastrelid FROM pg_class t WHERE t.relname = ANY(%(t)s) "
            "UNION SELECT i.indexrelid FROM pg_index i JOIN pg_class t ON t.oid = i.indrelid "
            "WHERE t.relname = ANY(%(t)s))",
            {"t": list(USER_TABLES)},
        ).fetchall()
        for name, path in rows:
            if path is None:
                continue
            data = conn.execute("SELECT pg_read_binary_file(%s, true)", (path,)).fetchone()
            if data and data[0] and marker in bytes(data[0]):
                found.append(name)
    return found


async def test_compact_leaves_no_erased_bytes_in_the_tables_files(
    engine: BeliefEngine, db_url: str
) -> None:
    marker = "Zorblax-Quintessa-9"
    async with engine.db.sa_engine.connect() as conn:
        if await conn.scalar(text("SELECT count(*) FROM pg_extension WHERE extname = 'citus'")):
            pytest.skip("on a cluster the rows live in the workers' files, not the coordinator's")
    await engine.apply(
        U,
        [Op.add(f"Has a parrot called {marker}")],
        provenance=replace(PROV, job_id=1),
        utterances=[Utterance(0, "user", f"My parrot is called {marker}.")],
    )
    assert {"beliefs", "episodes"} <= set(_residue(db_url, marker.encode()))
    await engine.erase_user(U)
    # Erased for every query; the deleted rows' bytes stay in the files until rewritten.
    assert await engine.history(U) == [] and await engine.episodes(U) == []
    assert _residue(db_url, marker.encode())
    assert set(await engine.compact()) >= {"beliefs", "episodes", "memory_jobs"}
    assert _residue(db_url, marker.encode()) == []
