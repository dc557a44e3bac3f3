"""Fusion of the read path's signals into one ranking, and near-duplicate suppression.

Pure functions over candidates already fetched by :mod:`.recall`; no I/O.

``fused = 0.80 * relevance + 0.12 * recency + 0.08 * confidence`` (times 0.9 for a
belief that is no longer active, outside ``as_of`` queries), where

* ``relevance`` is reciprocal rank fusion of the vector and the full-text rankings,
  ``(1/(k+r_vec) + 1/(k+r_text)) / (2/(k+1))``: 1.0 for the top of both lists, 0 when
  the query is empty. Ranks, not raw scores, so any embedder's similarity scale works.
* ``recency`` is ``0.5 ** (age / half_life)`` with age measured from the latest of
  ``valid_from``, ``last_confirmed_at`` and ``updated_at`` to the reference time.
* ``confidence`` is the belief's stored confidence in [0, 1].
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from .records import Belief, ScoredBelief

RRF_K = 10
W_RELEVANCE = 0.80
W_RECENCY = 0.12
W_CONFIDENCE = 0.08
INACTIVE_FACTOR = 0.9
HALF_LIFE_DAYS = 90.0
# Two beliefs whose embeddings are at least this similar say the same thing.
DUPLICATE_COSINE = 0.95


@dataclass(frozen=True)
class Candidate:
    """A belief fetched as a candidate, with its raw retrieval signals."""

    belief: Belief
    vector_rank: int | None  # 1-based rank among the vector candidates
    vector_similarity: float | None  # cosine similarity to the query embedding
    text_rank: int | None  # 1-based rank among the full-text matches
    text_score: float | None  # ts_rank
    other_model: bool = False  # its vector came from another embedding model: text only


def recency(belief: Belief, now: datetime, half_life_days: float = HALF_LIFE_DAYS) -> float:
    """Exponential decay in [0, 1] since the belief was last stated, confirmed or revised."""
    moments = [belief.valid_from, belief.updated_at]
    if belief.last_confirmed_at is not None:
        moments.append(belief.last_confirmed_at)
    age_days = max(0.0, (now - max(moments)).total_seconds() / 86400.0)
    return float(0.5 ** (age_days / half_life_days))


def relevance(vector_rank: int | None, text_rank: int | None, k: int = RRF_K) -> float:
    """Reciprocal rank fusion normalized to [0, 1]."""
    total = sum(1.0 / (k + r) for r in (vector_rank, text_rank) if r is not None)
    return total / (2.0 / (k + 1))


def score(
    candidates: Iterable[Candidate],
    now: datetime,
    *,
    as_of: bool = False,
    explain: bool = False,
) -> list[ScoredBelief]:
    """Fused scores, best first (ties: newer id first)."""
    out: list[ScoredBelief] = []
    for c in candidates:
        rel = relevance(c.vector_rank, c.text_rank)
        rec = recency(c.belief, now)
        conf = c.belief.confidence
        fused = W_RELEVANCE * rel + W_RECENCY * rec + W_CONFIDENCE * conf
        if not as_of and c.belief.status != "active":
            fused *= INACTIVE_FACTOR
        signals: dict[str, float] = {}
        if explain:
            signals = {
                "vector": c.vector_similarity if c.vector_similarity is not None else 0.0,
                "vector_rank": float(c.vector_rank or 0),
                "text": c.text_score if c.text_score is not None else 0.0,
                "text_rank": float(c.text_rank or 0),
                "relevance": rel,
                "recency": rec,
                "confidence": conf,
                "fused": fused,
                "other_model": float(c.other_model),
            }
        out.append(ScoredBelief(c.belief, fused, signals))
    out.sort(key=lambda s: (-s.score, -s.belief.id))
    return out


def drop_near_duplicates(
    ranked: Sequence[ScoredBelief], near: Mapping[int, Sequence[int]]
) -> list[ScoredBelief]:
    """Keep the better-ranked belief of every near-duplicate pair (``near`` is symmetric)."""
    kept: list[ScoredBelief] = []
    kept_ids: set[int] = set()
    for s in ranked:
        if kept_ids.isdisjoint(near.get(s.belief.id, ())):
            kept.append(s)
            kept_ids.add(s.belief.id)
    return kept
