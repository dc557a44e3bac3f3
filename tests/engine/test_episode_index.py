"""A user with many episodes is read through the HNSW index over their model's vectors (or,
holding a small share of the table, by the bits of their vectors), and finds what the
exact scan finds; the index is made where the database is opened with a model, and one
left half-built is made again."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator

import psycopg
import pytest
import pytest_asyncio

from mem01session.db import Database, migrate
from mem01session.db.vector_index import VectorIndex, ensure_vector_index, vector_index
from mem01session.embeddings import HashingEmbedder
from mem01session.engine import BeliefEngine, RecallRequest, episode_candidates
from mem01session.engine.episodes import Utterance
from mem01session.engine.ops import Provenance

from ..pg import create_database, drop_database, with_database
from .conftest import START, TickingClock

SAID = [
    "I keep bees on my roof in Lisbon",
    "My sister plays the cello every Sunday",
    "We adopted a grey cat called Pixel",
    "I am training for the Berlin marathon in September",
    "My favourite food is spicy ramen with extra egg",
    "I work as a nurse on night shifts",
    "We are planning a trip to Japan next spring",
    "I grow tomatoes and basil on the balcony",
    "My son started learning the violin",
    "I drive an old green Volvo",
    "I am allergic to peanuts and shellfish",
    "We moved to Porto two years ago",
]


async def tell_all(engine: BeliefEngine, user: str) -> None:
    for job, words in enumerate(SAID, start=1):
        await engine.apply(
            user,
            [],
            provenance=Provenance(session_id="chat", job_id=job, extractor="test"),
            utterances=[Utterance(0, "user", words)],
        )


@pytest_asyncio.fixture
async def indexed(
    db_url: str, embedder: HashingEmbedder, clock: TickingClock
) -> AsyncIterator[BeliefEngine]:
    """An engine on a database whose episode vectors have their HNSW index."""
    with psycopg.connect(db_url, autocommit=True) as conn:
        assert ensure_vector_index(conn, embedder.name, embedder.dim)
    db = await Database.open(url=db_url, embedding_model=embedder.name, embedding_dim=embedder.dim)
    yield BeliefEngine(db, embedder, clock=clock)
    await db.close()


def statements_sent(
    db: Database, monkeypatch: pytest.MonkeyPatch, method: str = "fetch_tuples"
) -> list[str]:
    """The statements sent through the direct pool's ``method`` from now on (then run as
    sent)."""
    sent: list[str] = []
    fetch = getattr(db.direct, method)

    async def spy(statement, params, **kwargs):  # type: ignore[no-untyped-def]
        sent.append(statement)
        return await fetch(statement, params, **kwargs)

    monkeypatch.setattr(db.direct, method, spy)
    return sent


def quoted(result: object) -> list[str]:
    return [e.episode.content for e in result.episodes]  # type: ignore[attr-defined]


async def test_a_user_past_the_bound_is_read_through_the_index_and_finds_what_the_scan_finds(
    indexed: BeliefEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    await tell_all(indexed, "many")
    request = RecallRequest("what do I keep on my roof?")
    monkeypatch.setattr(episode_candidates, "EXACT_UP_TO", 10**9)
    exact = await indexed.recall("many", request)
    sent = statements_sent(indexed.db, monkeypatch)
    monkeypatch.setattr(episode_candidates, "EXACT_UP_TO", len(SAID) - 1)
    walked = await indexed.recall("many", request)
    index = vector_index(indexed.embedder.name, indexed.embedder.dim)
    assert index is not None
    assert any(index.distance("e.embedding", "%(qvec)s") in s for s in sent)
    assert quoted(walked)[0] == "I keep bees on my roof in Lisbon"
    assert quoted(walked) == quoted(exact)


async def test_a_user_with_a_small_share_of_the_table_is_read_by_bits_and_finds_the_same(
    indexed: BeliefEngine, db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Walking the index filtered by user visits some pool / share entries: a user past the
    bound who holds little of the table has the bits of their vectors read instead, and the
    nearest by bits re-ranked exactly."""
    await tell_all(indexed, "many")
    for n in range(10):
        await tell_all(indexed, f"other-{n}")
    with psycopg.connect(db_url, autocommit=True) as conn:
        conn.execute("ANALYZE episodes")
    request = RecallRequest("what do I keep on my roof?")
    monkeypatch.setattr(episode_candidates, "EXACT_UP_TO", 10**9)
    exact = await indexed.recall("many", request)
    sent = statements_sent(indexed.db, monkeypatch)
    monkeypatch.setattr(episode_candidates, "EXACT_UP_TO", len(SAID) - 1)  # 12 of 132: 9%
    result = await indexed.recall("many", request)
    index = vector_index(indexed.embedder.name, indexed.embedder.dim)
    assert index is not None
    assert sent and not any(index.distance("e.embedding", "%(qvec)s") in s for s in sent)
    assert any("embedding_bits <~>" in s for s in sent)
    assert quoted(result)[0] == "I keep bees on my roof in Lisbon"
    assert quoted(result) == quoted(exact)  # 12 episodes: all within the rough pool


def bits_scans(db_url: str, embedder: HashingEmbedder, days: bool) -> list[dict[str, object]]:
    """The plan's scans of ``episodes_user_bits_idx`` for a user read by bits (the days a
    query names: ``days``)."""
    bits = episode_candidates.BITS
    statement = episode_candidates._statement("", True, bits if days else None, bits)
    vector = "[" + ",".join(["0.1"] * embedder.dim) + "]"
    params = {
        "user_id": "u", "model": embedder.name, "qvec": vector, "pool": 50, "rough": 400,
        "query": "bees", "max_terms": 8, "common_share": 0.5, "common_min": 3,
        "context_weight": 0.75, "max_matches": 1000,
        "days_from": "2026-03-01T00:00:00Z", "days_until": "2026-04-01T00:00:00Z",
    }  # fmt: skip
    with psycopg.connect(db_url, autocommit=True) as conn:
        conn.execute("SET enable_seqscan = off")
        conn.execute("SET enable_bitmapscan = off")
        [(plan,)] = conn.execute(f"EXPLAIN (FORMAT JSON) {statement}", params).fetchall()

    def nodes(node: dict[str, object]) -> list[dict[str, object]]:
        below = node.get("Plans", [])
        assert isinstance(below, list)
        return [node, *(n for child in below for n in nodes(child))]

    return [n for n in nodes(plan[0]["Plan"]) if n.get("Index Name") == "episodes_user_bits_idx"]


def test_the_bits_are_read_from_their_index_alone(db_url: str, embedder: HashingEmbedder) -> None:
    """The rough list of a user read by bits is an index-only scan of
    ``episodes_user_bits_idx``: no row of the table is fetched for it."""
    scans = bits_scans(db_url, embedder, days=False)
    assert "Index Only Scan" in [n["Node Type"] for n in scans]


def test_the_days_bits_are_read_as_one_range_of_the_time_said(
    db_url: str, embedder: HashingEmbedder
) -> None:
    """A question naming days reads those days' bits alone: the index is keyed by the time
    said, so the days are a range of it, not a filter over all of the user's bits."""
    scans = bits_scans(db_url, embedder, days=True)
    ranged = [n for n in scans if "said_at >=" in str(n.get("Index Cond", ""))]
    assert ranged and all(n["Node Type"] == "Index Only Scan" for n in ranged)


def test_each_candidates_row_is_fetched_by_its_key_even_planned_on_an_empty_table(
    pg_admin_url: str, template_db: str
) -> None:
    """The statement's generic plan, made while the table is new and empty (the direct
    pool plans once per connection and keeps the plan), reads each candidate's row by its
    key. Joined freely, such a plan drove the join from all of the user's episodes and read
    the candidates again for each: several times slower once the user held hundreds, until
    autovacuum analyzed the table."""
    statement = episode_candidates._statement("", True, None, episode_candidates.EXACT)
    names: list[str] = []

    def numbered(match: re.Match[str]) -> str:
        if match[1] not in names:
            names.append(match[1])
        return f"${names.index(match[1]) + 1}"

    generic = re.sub(r"%\((\w+)\)s", numbered, statement)
    name = create_database(pg_admin_url, template=template_db)  # new: never analyzed
    try:
        with psycopg.connect(with_database(pg_admin_url, name), autocommit=True) as conn:
            [(analyzed,)] = conn.execute(
                "SELECT reltuples FROM pg_class WHERE oid = 'episodes'::regclass"
            ).fetchall()
            assert analyzed < 0  # the planner guesses the table's size
            [(plan,)] = conn.execute(f"EXPLAIN (GENERIC_PLAN, FORMAT JSON) {generic}").fetchall()
    finally:
        drop_database(pg_admin_url, name)

    def pairs(node: dict[str, object]) -> list[tuple[dict[str, object], dict[str, object]]]:
        below = node.get("Plans", [])
        assert isinstance(below, list)
        return [(node, child) for child in below] + [p for c in below for p in pairs(c)]

    rows = [
        (parent["Node Type"], child["Node Type"], str(child.get("Index Cond")))
        for parent, child in pairs(plan[0]["Plan"])
        if child.get("Relation Name") == "episodes" and child.get("Alias") == "x"
    ]
    assert len(rows) == 1
    parent, scan, cond = rows[0]
    assert (parent, scan) == ("Limit", "Index Scan") and "id = " in cond


def test_the_index_serves_the_statement_a_large_user_gets(
    db_url: str, embedder: HashingEmbedder
) -> None:
    """The statement orders by the indexed expression and names the model as the index's
    predicate does: the planner can take the index (as it does once the table is large;
    here it is told to prefer it)."""
    index = vector_index(embedder.name, embedder.dim)
    assert index is not None
    statement = episode_candidates._statement("", True, None, index)
    vector = "[" + ",".join(["0.1"] * embedder.dim) + "]"
    params = {
        "user_id": "u", "model": embedder.name, "qvec": vector, "pool": 50, "query": "bees",
        "max_terms": 8, "common_share": 0.5, "common_min": 3, "context_weight": 0.75,
        "max_matches": 1000,
    }  # fmt: skip
    with psycopg.connect(db_url, autocommit=True) as conn:
        ensure_vector_index(conn, embedder.name, embedder.dim)
        conn.execute("SET enable_seqscan = off")
        conn.execute("SET enable_bitmapscan = off")
        row = conn.execute(f"EXPLAIN (FORMAT JSON) {statement}", params).fetchone()
    assert row is not None
    assert index.name in json.dumps(row[0])


async def test_opening_with_a_model_makes_its_index_and_the_drift_check_ignores_it(
    db_url: str,
) -> None:
    embedder = HashingEmbedder(48)
    db = await Database.open(
        url=db_url, auto_migrate=True, embedding_model=embedder.name, embedding_dim=48
    )
    try:
        made = await db.vector_index(embedder.name, 48)
    finally:
        await db.close()
    assert made == VectorIndex(embedder.name, 48)
    assert migrate.check(db_url) == []


def test_an_index_left_half_built_is_made_again(db_url: str) -> None:
    index = VectorIndex("half", 4)
    with psycopg.connect(db_url, autocommit=True) as conn:
        conn.execute(index.create_sql(concurrently=False))
        conn.execute(
            "UPDATE pg_index SET indisvalid = false WHERE indexrelid = %s::regclass", (index.name,)
        )
        assert ensure_vector_index(conn, "half", 4)
        valid = conn.execute(
            "SELECT indisvalid FROM pg_index WHERE indexrelid = %s::regclass", (index.name,)
        ).fetchone()
    assert valid == (True,)


@pytest.mark.parametrize(
    ("dim", "kind"), [(384, "vector(384)"), (3072, "halfvec(3072)"), (4001, None)]
)
def test_a_models_dimension_picks_the_index_type_hnsw_can_take(dim: int, kind: str | None) -> None:
    index = vector_index("m", dim)
    assert (index.cast if index else None) == kind


async def test_a_word_past_the_matches_bound_is_left_to_the_vectors_and_rarer_ones_still_match(
    db: Database, embedder: HashingEmbedder, clock: TickingClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = BeliefEngine(db, embedder, clock=clock)
    garden = [f"The garden needed work again, day {i}" for i in range(6)]
    for job, words in enumerate([*garden, "The bees swarmed in the garden today"], start=1):
        await engine.apply(
            "gardener",
            [],
            provenance=Provenance(session_id="chat", job_id=job, extractor="test"),
            utterances=[Utterance(0, "user", words)],
        )
    monkeypatch.setattr(episode_candidates, "COMMON_SHARE", 2.0)  # "garden" stays a word
    monkeypatch.setattr(episode_candidates, "EXACT_UP_TO", 6)  # 7 episodes: a lifetime
    vector = (await embedder.embed(["bees garden"]))[0]

    async def matched() -> set[str]:
        found = await episode_candidates.fetch_episodes(
            engine.parts, "gardener", "bees garden", vector, clock(), pool=50
        )
        return {c.episode.content for c in found if c.text_rank is not None}

    monkeypatch.setattr(episode_candidates, "MAX_TEXT_MATCHES", 3)
    assert await matched() == {"The bees swarmed in the garden today"}  # "garden": 7 > 3
    monkeypatch.setattr(episode_candidates, "EXACT_UP_TO", 7)  # a user with a few: no bound
    assert len(await matched()) == 7  # both words matched: every episode


async def test_a_users_episode_count_is_read_once_then_each_recall_brings_it(
    indexed: BeliefEngine, clock: TickingClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """How a user's vectors are read follows from their episode count: read by a statement
    of its own for a user not recalled lately, then carried by each recall's statement."""
    await tell_all(indexed, "counted")
    sent = statements_sent(indexed.db, monkeypatch, "fetch")
    for _ in range(2):
        await indexed.recall("counted", "what do I keep on my roof?")
    assert sent.count(episode_candidates.COUNT_SQL) == 1
    assert indexed.parts.episode_counts.get("counted") == len(SAID)
    # Another process tells more: this one's next recall brings the new count along.
    other = BeliefEngine(indexed.db, indexed.embedder, clock=clock)
    await other.apply(
        "counted", [], provenance=Provenance(session_id="chat", job_id=99, extractor="test"),
        utterances=[Utterance(0, "user", "I also keep two goats")],
    )  # fmt: skip
    await indexed.recall("counted", "what do I keep on my roof?")
    assert indexed.parts.episode_counts.get("counted") == len(SAID) + 1
    assert sent.count(episode_candidates.COUNT_SQL) == 1
    # Counted as a lifetime but nothing found (erased since, say): counted again next time.
    monkeypatch.setattr(episode_candidates, "EXACT_UP_TO", -1)
    for _ in range(2):
        await indexed.recall("nobody", "what do I keep on my roof?")
    assert sent.count(episode_candidates.COUNT_SQL) == 3


async def test_the_tables_size_is_read_once_for_a_run_of_lifetime_recalls(
    indexed: BeliefEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whether a lifetime user is read through the index or by bits follows from their
    share of the table; the table's size (the planner's estimate, which moves only when
    it is analyzed) is read by one statement, not one per recall, until it is a minute old."""
    await tell_all(indexed, "many")
    monkeypatch.setattr(episode_candidates, "EXACT_UP_TO", len(SAID) - 1)
    sent = statements_sent(indexed.db, monkeypatch, "fetch")
    for _ in range(3):
        assert quoted(await indexed.recall("many", "what do I keep on my roof?"))
    assert sent.count(episode_candidates.TABLE_SQL) == 1
    monkeypatch.setattr(indexed.parts.episodes_table, "TTL", -1.0)  # a minute later
    await indexed.recall("many", "what do I keep on my roof?")
    assert sent.count(episode_candidates.TABLE_SQL) == 2


@pytest.mark.parametrize("bits_factor", [4, 0], ids=["bits", "bits-off"])
async def test_a_lifetime_users_days_are_read_by_bits_unless_the_bits_are_off(
    indexed: BeliefEngine, monkeypatch: pytest.MonkeyPatch, bits_factor: int
) -> None:
    """A lifetime user walked through the index has the days a question names read by
    their bits, or, with the bits off (``BITS_FACTOR`` 0), every vector of those days:
    either way what was said that day is found."""
    await tell_all(indexed, "many")
    monkeypatch.setattr(episode_candidates, "EXACT_UP_TO", len(SAID) - 1)
    monkeypatch.setattr(episode_candidates, "MIN_SHARE", 0.0)  # the index, whatever the share
    monkeypatch.setattr(episode_candidates, "BITS_FACTOR", bits_factor)
    sent = statements_sent(indexed.db, monkeypatch)
    request = RecallRequest(f"what do I keep on my roof on {START:%B} {START.day}?", explain=True)
    result = await indexed.recall("many", request)
    assert quoted(result)[0] == "I keep bees on my roof in Lisbon"
    assert result.episodes[0].signals["day_rank"] > 0
    [statement] = [s for s in sent if "day AS MATERIALIZED" in s]
    days = statement.split("day AS MATERIALIZED", 1)[1].split("cand AS", 1)[0]
    assert ("embedding_bits <~>" in days) == (bits_factor > 0)
