"""The rule extractor through the real engine: Monday, Wednesday, and planted secrets."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from sqlalchemy import text

from mem01session.db import Database
from mem01session.embeddings import HashingEmbedder
from mem01session.engine.ops import Provenance, resolve_aliases
from mem01session.extraction import Candidate, Extractor, RuleExtractor, Turn, TurnMessage

engine_module = pytest.importorskip("mem01session.engine")
BeliefEngine = engine_module.BeliefEngine

USER = "user-123"
MONDAY = datetime(2026, 5, 11, 9, tzinfo=UTC)
WEDNESDAY = datetime(2026, 5, 13, 9, tzinfo=UTC)


async def _say(
    engine: BeliefEngine, extractor: Extractor, session_id: str, item: str, said: str, at: datetime
) -> None:
    """What the session's worker does for one turn: candidates, extract, map back, apply."""
    found = await engine.search(USER, said, limit=10)
    aliases = {f"b{i}": sb.belief.id for i, sb in enumerate(found, start=1)}
    candidates = [
        Candidate(f"b{i}", sb.belief.content, sb.belief.key, sb.belief.valid_from)
        for i, sb in enumerate(found, start=1)
    ]
    turn = Turn(session_id, (TurnMessage("user", said, item),), at)
    extraction = await extractor.extract(turn, candidates, at)
    ops = resolve_aliases(extraction.ops, aliases)
    provenance = Provenance(
        session_id=session_id, item_ref=item, observed_at=at, extractor=extractor.name
    )
    try:
        await engine.apply(USER, ops, provenance=provenance)
    except (NotImplementedError, ImportError) as exc:  # engine write path not there yet
        pytest.skip(f"engine write path unavailable: {exc}")


@pytest.mark.parametrize(
    ("monday", "wednesday"),
    [
        ("I live in NYC and pay $2,400 in rent.", "I moved to San Francisco."),
        ("I live in NYC, rent is $2,400", "I moved to SF"),  # as the README tells it
    ],
)
async def test_monday_wednesday_through_rules_and_engine(
    db: Database, embedder: HashingEmbedder, monday: str, wednesday: str
) -> None:
    engine = BeliefEngine(db, embedder, clock=lambda: WEDNESDAY)
    rules = RuleExtractor()
    await _say(engine, rules, "conv-monday", "mon-1", monday, MONDAY)
    await _say(engine, rules, "conv-wednesday", "wed-1", wednesday, WEDNESDAY)

    beliefs = await engine.history(USER, include_inactive=True)
    by_content = {b.content: b for b in beliefs}
    sf, nyc = by_content["Lives in San Francisco"], by_content["Lives in New York City"]
    rent = by_content["Pays $2,400 a month in rent"]

    assert sf.status == "active" and sf.key == "home.city"
    assert nyc.status == "superseded" and nyc.superseded_by == sf.id
    assert nyc.valid_to == sf.valid_from == WEDNESDAY
    # The move ended the rent of the home left: retired as of the move, text kept.
    assert rent.status == "invalidated" and rent.key == "home.rent"
    assert rent.valid_from == MONDAY and rent.valid_to == WEDNESDAY
    assert {b.content for b in beliefs if b.status == "active"} == {sf.content}

    for belief, session, item in ((sf, "conv-wednesday", "wed-1"), (rent, "conv-monday", "mon-1")):
        full = await engine.get(USER, belief.id)
        assert any(
            s.session_id == session and s.item_ref == item and s.extractor == "rules-v1"
            for s in full.sources
        ), full.sources
    (nyc_source,) = (await engine.get(USER, nyc.id)).sources
    assert nyc_source.evidence == monday


PLANTED = (
    "hunter2-SENTINEL",
    "sk-proj-SENTINEL9x8y7z6w5v4u",
    "4111 1111 1111 1111",
    "ghp_SENTINELaB3dE5fG7hJ9kL1mN3pQ5rS",
)


async def test_planted_secrets_reach_no_table(db: Database, embedder: HashingEmbedder) -> None:
    engine = BeliefEngine(db, embedder, clock=lambda: MONDAY)
    said = (
        f"I work at Acme, my password is {PLANTED[0]}. I live in Oslo and my key is "
        f"{PLANTED[1]}. I pay $900 a month for my car, card {PLANTED[2]}. "
        f"I love jazz, token: {PLANTED[3]}."
    )
    await _say(engine, RuleExtractor(), "conv-1", "item-1", said, MONDAY)
    assert len(await engine.history(USER)) >= 2  # the facts themselves were kept

    async with db.sa_engine.connect() as conn:
        tables = (
            await conn.execute(
                text("SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")
            )
        ).scalars()
        dump = ""
        for table in list(tables):
            rows = await conn.execute(text(f'SELECT row_to_json(t)::text FROM "{table}" t'))
            dump += "\n".join(rows.scalars())
    assert "Acme" in dump and "Oslo" in dump
    for secret in PLANTED:
        assert secret not in dump
        assert secret.replace(" ", "") not in dump
