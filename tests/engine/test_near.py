"""Near-duplicates: linked when a belief's vector is written, read back by recall."""

from __future__ import annotations

import math
from collections.abc import Sequence

from mem01session.db import Database
from mem01session.embeddings import HashingEmbedder, Vector
from mem01session.engine import BeliefEngine
from mem01session.engine.near import DUPLICATE_COSINE, Twin, near_duplicates
from mem01session.engine.ops import Op, Provenance
from mem01session.engine.records import RecallRequest

from .conftest import TickingClock

PROV = Provenance(session_id="s1", extractor="test")


def twin(bid: int, *linked: int, text: str = "", status: str = "active") -> Twin:
    return Twin(bid, status, text or f"text {bid}", linked)


def test_linked_candidates_of_one_status_pair() -> None:
    near = near_duplicates([twin(1, 2), twin(2, 1), twin(3)])
    assert near == {1: [2], 2: [1]}


def test_equal_normalized_text_pairs_without_links() -> None:
    near = near_duplicates([twin(1, text="lives in lyon"), twin(2, text="lives in lyon"), twin(3)])
    assert near == {1: [2], 2: [1]}


def test_a_pair_found_twice_is_listed_once() -> None:
    near = near_duplicates([twin(1, 2, text="x"), twin(2, 1, text="x")])
    assert near == {1: [2], 2: [1]}


def test_different_statuses_never_pair() -> None:
    near = near_duplicates([twin(1, 2, text="x"), twin(2, 1, text="x", status="superseded")])
    assert near == {}


def test_a_link_to_a_belief_that_is_not_a_candidate_is_ignored() -> None:
    assert near_duplicates([twin(1, 7), twin(2)]) == {}


# -- links written by the write path (real PostgreSQL) -------------------------------------


def at_cosine(c: float, dim: int, side: float = 1.0) -> Vector:
    """A vector whose cosine with the first axis is ``c`` (its rest on the second axis)."""
    return [c, side * math.sqrt(1.0 - c * c)] + [0.0] * (dim - 2)


class PlantedEmbedder:
    """The test's embedder with planted vectors for some texts (by default under the
    hashing model's name and size, so the database takes them as that model's)."""

    def __init__(self, inner: HashingEmbedder, planted: dict[str, Vector], name: str = "") -> None:
        self.inner, self.planted = inner, planted
        self.name, self.dim = name or inner.name, inner.dim

    async def embed(self, texts: Sequence[str]) -> list[Vector]:
        return [self.planted.get(t) or (await self.inner.embed([t]))[0] for t in texts]


async def links(db: Database, user_id: str) -> set[tuple[int, int]]:
    rows = await db.direct.fetch(
        "SELECT belief_id, twin_id FROM belief_twins WHERE user_id = %(u)s", {"u": user_id}
    )
    return {(int(r["belief_id"]), int(r["twin_id"])) for r in rows}


def planted_engine(db: Database, embedder: HashingEmbedder, clock: TickingClock) -> BeliefEngine:
    dim = embedder.dim
    planted = {
        "Lives in Lyon": at_cosine(1.0, dim),
        "Resides in Lyon": at_cosine(DUPLICATE_COSINE + 0.002, dim),
        "Lives near Lyon": at_cosine(DUPLICATE_COSINE - 0.01, dim, side=-1.0),
        "Collects stamps": [0.0, 0.0, 1.0] + [0.0] * (dim - 3),
    }
    return BeliefEngine(db, PlantedEmbedder(embedder, planted), clock=clock)


async def test_a_belief_is_linked_to_the_near_duplicates_it_is_written_beside(
    db: Database, embedder: HashingEmbedder, clock: TickingClock
) -> None:
    engine = planted_engine(db, embedder, clock)
    first = await engine.apply("u1", [Op.add("Lives in Lyon")], provenance=PROV)
    later = await engine.apply(
        "u1", [Op.add("Resides in Lyon"), Op.add("Lives near Lyon")], provenance=PROV
    )
    a, (b, c) = first.changes[0].belief_id, [ch.belief_id for ch in later.changes]
    assert await links(db, "u1") == {(a, b), (b, a)}  # c is just below the threshold
    assert await links(db, "u2") == set()

    result = await engine.recall("u1", "Lyon")
    shown = {s.belief.id for s in result.beliefs}
    assert len(shown & {a, b}) == 1 and c in shown


async def test_a_revised_statement_is_linked_anew(
    db: Database, embedder: HashingEmbedder, clock: TickingClock
) -> None:
    engine = planted_engine(db, embedder, clock)
    done = await engine.apply(
        "u1", [Op.add("Lives in Lyon"), Op.add("Resides in Lyon")], provenance=PROV
    )
    a, b = (ch.belief_id for ch in done.changes)
    assert await links(db, "u1") == {(a, b), (b, a)}
    await engine.apply("u1", [Op.update(b, content="Collects stamps")], provenance=PROV)
    assert await links(db, "u1") == set()


async def test_a_superseded_twin_stays_linked_but_is_not_paired_with_an_active_one(
    db: Database, embedder: HashingEmbedder, clock: TickingClock
) -> None:
    engine = planted_engine(db, embedder, clock)
    a = (await engine.apply("u1", [Op.add("Lives in Lyon")], provenance=PROV)).changes[0].belief_id
    b = (
        (await engine.apply("u1", [Op.supersede(a, "Resides in Lyon")], provenance=PROV))
        .changes[0]
        .belief_id
    )
    assert await links(db, "u1") == {(a, b), (b, a)}
    result = await engine.recall("u1", RecallRequest("Lyon", include_history=True))
    assert {a, b} <= {s.belief.id for s in result.beliefs}


async def test_reembedding_links_beliefs_by_their_new_vectors(
    db: Database, embedder: HashingEmbedder, clock: TickingClock
) -> None:
    old = BeliefEngine(db, embedder, clock=clock)
    # Same words, so the same hashed vector: linked under the old model.
    done = await old.apply(
        "u1", [Op.add("Lives in San Francisco"), Op.add("lives in san-francisco"),
               Op.add("Lives in Lyon"), Op.add("Resides in Lyon")],
        provenance=PROV,
    )  # fmt: skip
    dog, man, lives, resides = (ch.belief_id for ch in done.changes)
    assert (dog, man) in await links(db, "u1") and (lives, resides) not in await links(db, "u1")

    dim = embedder.dim
    planted = {
        "Lives in San Francisco": at_cosine(1.0, dim),
        "lives in san-francisco": at_cosine(0.5, dim),
        "Lives in Lyon": [0.0, 0.0, 1.0] + [0.0] * (dim - 3),
        "Resides in Lyon": [0.0, 0.0, 0.99, 0.1] + [0.0] * (dim - 4),
    }
    new = BeliefEngine(db, PlantedEmbedder(embedder, planted, name="planted"), clock=clock)
    report = await new.reembed(batch_size=3)
    assert report.converted == 4
    assert await links(db, "u1") == {(lives, resides), (resides, lives)}
