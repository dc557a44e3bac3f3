"""Seeding beliefs with plain SQL, so read-path tests do not depend on the write path."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from sqlalchemy import text

from mem01session.db import Database
from mem01session.embeddings import HashingEmbedder
from mem01session.engine import BeliefEngine, near
from mem01session.engine.records import normalize_content
from mem01session.engine.row_mapping import vector_literal
from mem01session.tokens import TokenCounter

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)

_INSERT_BELIEF = text(
    """
    INSERT INTO beliefs (user_id, content, norm_content, key, status, confidence, valid_from,
                         valid_to, created_at, updated_at, last_confirmed_at, superseded_by,
                         embedding, embedding_model)
    VALUES (:user_id, :content, :norm, :key, :status, :confidence, :valid_from, :valid_to,
            :valid_from, :updated_at, :last_confirmed_at, :superseded_by,
            CAST(:embedding AS vector), :embedding_model)
    RETURNING id
    """
)
_INSERT_SOURCE = text(
    """
    INSERT INTO belief_sources (user_id, belief_id, session_id, item_ref, evidence,
                                observed_at, extractor)
    VALUES (:user_id, :belief_id, :session_id, :item_ref, :evidence, :observed_at, :extractor)
    """
)


def make_engine(
    db: Database,
    embedder: HashingEmbedder,
    *,
    now: datetime = NOW,
    token_counter: TokenCounter | None = None,
) -> BeliefEngine:
    """An engine whose clock is frozen at ``now``."""
    return BeliefEngine(db, embedder, clock=lambda: now, token_counter=token_counter)


async def seed_belief(
    db: Database,
    embedder: HashingEmbedder,
    user_id: str,
    content: str,
    *,
    status: str = "active",
    confidence: float = 0.8,
    valid_from: datetime | None = None,
    valid_to: datetime | None = None,
    updated_at: datetime | None = None,
    last_confirmed_at: datetime | None = None,
    superseded_by: int | None = None,
    key: str | None = None,
    sources: Sequence[tuple[str | None, str | None]] = (("s1", None),),
    observed_at: datetime | None = None,
) -> int:
    """Insert one belief (embedded with ``embedder``) and its sources; returns its id.

    ``sources`` holds ``(session_id, evidence)`` pairs.
    """
    valid_from = valid_from or NOW - timedelta(days=10)
    [vec] = await embedder.embed([content])
    async with db.sa_engine.begin() as conn:
        belief_id = (
            await conn.execute(
                _INSERT_BELIEF,
                {
                    "user_id": user_id,
                    "content": content,
                    "norm": normalize_content(content),
                    "key": key,
                    "status": status,
                    "confidence": confidence,
                    "valid_from": valid_from,
                    "valid_to": valid_to,
                    "updated_at": updated_at or valid_to or valid_from,
                    "last_confirmed_at": last_confirmed_at,
                    "superseded_by": superseded_by,
                    "embedding": vector_literal(vec),
                    "embedding_model": embedder.name,
                },
            )
        ).scalar_one()
        # Its near-duplicate links, as the write path makes them with a belief's vector.
        await conn.execute(
            text(near.LINK), {"u": user_id, "ids": [belief_id], "max_distance": near.MAX_DISTANCE}
        )
        for session_id, evidence in sources:
            await conn.execute(
                _INSERT_SOURCE,
                {
                    "user_id": user_id,
                    "belief_id": belief_id,
                    "session_id": session_id,
                    "item_ref": None,
                    "evidence": evidence,
                    "observed_at": observed_at or valid_from,
                    "extractor": "seed",
                },
            )
    return int(belief_id)
