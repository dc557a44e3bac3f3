"""Fusion of the read path's signals into one ranking, and near-duplicate suppression.

Pure functions over candidates already fetched by :mod:`.candidates`; no I/O.

``fused = relevance * (0.96 + 0.04 * recency) * (0.92 + 0.08 * confidence)`` (times 0.9
for a belief that is no longer active, outside ``as_of`` queries; when the question names
days, times 0.9 instead for a belief not known to hold in them: one that ended before them
or was first said after them, see :func:`held_during`), where

* ``relevance`` fuses the vector and the full-text rankings: each list gives a belief
  ``(k + 1) / (k + rank)`` (k = 60, the customary constant), the full-text one scaled by
  the share of the query's word weight the belief covers (rare words weigh more: see
  :mod:`.candidates`), left out below 20% of it and doubled (:data:`TEXT_WEIGHT`), and the
  two are averaged: 1.5 for the top of both lists matching the whole query, 0 when the
  query is empty. Ranks, not raw scores, so any embedder's
  similarity scale works; the coverage keeps a match on one word of a long question from
  outranking a strong vector hit.
* ``recency`` is ``0.5 ** (age / half_life)`` with age measured from the latest of
  ``valid_from``, ``last_confirmed_at`` and ``updated_at`` to the reference time.
* ``confidence`` is the belief's stored confidence in [0, 1].

Recency and confidence scale relevance rather than add to it, so that among weakly
relevant beliefs (the tail of a large block) they reorder neighbours, not whole stretches
of the ranking, and an irrelevant belief never rises for being recent. The choice and the
alternatives it was measured against are in docs/benchmarks.md, "Choosing the fusion"
(``python -m bench fusion``, on LoCoMo conversation 26 only); the text weight, measured on
real dialogue through the whole pipeline, under "End-to-end memory on real dialogue"
(``python -m bench e2e``).
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import NamedTuple

from .records import Belief, Episode, ScoredBelief, ScoredEpisode
from .small_talk import is_small_talk

RRF_K = 60
MIN_COVERAGE = 0.2
# The full-text list's weight against the vector list's. Scaled by coverage (a share of
# the query, rarely near 1), a text match counted once weighed less than a vector match of
# the same rank; on real dialogue the words found matter more than that (see the module).
TEXT_WEIGHT = 2.0
W_RECENCY = 0.04
W_CONFIDENCE = 0.08
INACTIVE_FACTOR = 0.9
# An episode's score is scaled by this much: at equal relevance the belief (a conclusion,
# current, shorter) is packed first, the quote after it.
EPISODE_FACTOR = 0.9
# What being said in the days a question names ("in June", "on Monday") adds to an
# episode's relevance, times its rank term among those days' episodes (by similarity).
DAY_WEIGHT = 0.5
# A passage of small talk ("Thanks, that's all for today.", .small_talk) is scaled by this.
SMALL_TALK_FACTOR = 0.7
# How many of each kind's best vector candidates set that kind's typical similarity, when
# both kinds have that many (see rank_jointly).
CALIBRATION_TOP = 20
# An episode no word of the query found, less similar than this share of the best one, is
# not relevant enough to be quoted, however much budget remains (see relevant()).
FLOOR_SHARE = 0.25


@dataclass(frozen=True)
class Fusion:
    """How the vector and full-text rankings combine into relevance (see the module doc).

    Each list gives a belief ``(k + 1) / (k + rank)`` (1 for its top belief); a full-text
    match's is scaled by ``text_weight`` and by how much of the query's word weight it
    covers (``text_score``, when the statement gives one), and dropped when that share is
    under ``min_coverage``. ``mode="rrf"`` adds the two and halves the sum; ``mode="max"``
    takes the stronger one plus ``agreement`` times the weaker, over ``1 + agreement``, so
    a strong hit in one list alone is never halved. ``combine="product"`` scales relevance
    by recency and confidence; ``"sum"`` adds them with their weights.
    """

    mode: str = "rrf"
    k: float = RRF_K
    text_weight: float = TEXT_WEIGHT
    agreement: float = 1.0
    use_coverage: bool = True
    min_coverage: float = MIN_COVERAGE
    combine: str = "product"
    w_recency: float = W_RECENCY
    w_confidence: float = W_CONFIDENCE


HALF_LIFE_DAYS = 90.0


class Candidate(NamedTuple):
    """A belief fetched as a candidate, with its raw retrieval signals (a named tuple:
    dozens are made per recall)."""

    belief: Belief
    vector_rank: int | None  # 1-based rank among the vector candidates
    vector_similarity: float | None  # cosine similarity to the query embedding
    text_rank: int | None  # 1-based rank among the full-text matches
    text_score: float | None  # ts_rank
    other_model: bool = False  # its vector came from another embedding model: text only


def recency(belief: Belief, now: datetime, half_life_days: float = HALF_LIFE_DAYS) -> float:
    """Exponential decay in [0, 1] since the belief was last stated, confirmed or revised."""
    latest = max(belief.valid_from, belief.updated_at)
    confirmed = belief.last_confirmed_at
    if confirmed is not None and confirmed > latest:
        latest = confirmed
    age_days = (now - latest).total_seconds() / 86400.0
    return 1.0 if age_days <= 0.0 else float(0.5 ** (age_days / half_life_days))


def held_during(belief: Belief, start: datetime, end: datetime) -> bool:
    """Whether ``belief`` is known to hold at some moment of ``[start, end)``: said by
    then, and not ended before it. A belief's ``valid_from`` is when it was said (or when
    it replaced another), so one first said later may have held already: it is not
    known to, and ranks below what is."""
    if belief.valid_from >= end:
        return False
    if belief.status == "active":
        return True
    ended = belief.valid_to or belief.updated_at
    return ended > start


def _in_time(belief: Belief, days: tuple[datetime, datetime] | None) -> bool:
    """Whether ``belief`` holds when the question asks: now, or in the days it names."""
    return belief.status == "active" if days is None else held_during(belief, *days)


def relevance(
    vector_rank: int | None,
    text_rank: int | None,
    fusion: Fusion = Fusion(),
    text_score: float | None = None,
) -> float:
    """The fused relevance of a candidate, from 0 to ``(1 + text_weight) / 2`` (see
    :class:`Fusion`)."""
    k = fusion.k
    v = (k + 1) / (k + vector_rank) if vector_rank is not None else 0.0
    t = (k + 1) / (k + text_rank) if text_rank is not None else 0.0
    t *= fusion.text_weight
    if fusion.use_coverage and text_score is not None:
        t = t * text_score if text_score >= fusion.min_coverage else 0.0
    if fusion.mode == "max":
        return (max(v, t) + fusion.agreement * min(v, t)) / (1.0 + fusion.agreement)
    return (v + t) / 2.0


def score(
    candidates: Iterable[Candidate],
    now: datetime,
    *,
    as_of: bool = False,
    explain: bool = False,
    fusion: Fusion = Fusion(),
    days: tuple[datetime, datetime] | None = None,
) -> list[ScoredBelief]:
    """Fused scores, best first (ties: newer id first). ``days``: the moments the question
    names (``[start, end)``), if any: then what held in them ranks first, current or not."""
    out: list[ScoredBelief] = []
    for c in candidates:
        rel = relevance(c.vector_rank, c.text_rank, fusion, c.text_score)
        rec = recency(c.belief, now)
        conf = c.belief.confidence
        if fusion.combine == "product":
            # Without a query (no rank in either list) recency and confidence alone order.
            base = rel if c.vector_rank is not None or c.text_rank is not None else 1.0
            fused = (
                base
                * (1.0 - fusion.w_recency + fusion.w_recency * rec)
                * (1.0 - fusion.w_confidence + fusion.w_confidence * conf)
            )
        else:
            w_rel = 1.0 - fusion.w_recency - fusion.w_confidence
            fused = w_rel * rel + fusion.w_recency * rec + fusion.w_confidence * conf
        if not as_of and not _in_time(c.belief, days):
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


class EpisodeCandidate(NamedTuple):
    """An episode fetched as a candidate, with its raw retrieval signals."""

    episode: Episode
    vector_rank: int | None
    vector_similarity: float | None
    text_rank: int | None
    text_score: float | None
    day_rank: int | None = None  # 1-based rank among those said in the days the query names


def offset(beliefs: Sequence[Candidate], episodes: Sequence[EpisodeCandidate]) -> float:
    """How much more similar to a query a belief typically is than an episode (negative:
    less): the median similarity of each kind's :data:`CALIBRATION_TOP` best vector
    candidates, the episodes' subtracted from the beliefs'; 0 when either kind has fewer.

    A belief is a short statement, often in the words a question uses ("Caroline attended
    a support group", asked "What did Caroline attend?"); an episode is what was said, in
    a chat's words. Their similarities to a query are on different scales, so one kind
    compared raw with the other takes the top ranks for its kind alone."""
    top = CALIBRATION_TOP
    b = sorted((c.vector_similarity for c in beliefs if c.vector_similarity is not None),
               reverse=True)[:top]  # fmt: skip
    e = sorted((c.vector_similarity for c in episodes if c.vector_similarity is not None),
               reverse=True)[:top]  # fmt: skip
    if len(b) < top or len(e) < top:
        return 0.0
    return statistics.median(b) - statistics.median(e)


def rank_jointly(
    beliefs: Sequence[Candidate], episodes: Sequence[EpisodeCandidate]
) -> tuple[list[Candidate], list[EpisodeCandidate]]:
    """Beliefs and episodes ranked as one list per retriever: the vector candidates by
    similarity (each kind's measured from its typical similarity, :func:`offset`), the
    full-text matches by the share of the query's word weight they cover. Each statement
    ranks its own kind only, and a user's few beliefs would otherwise take the top ranks
    whatever they say; ranked together, relevance compares the two kinds. Unchanged when
    one kind is absent."""
    if not beliefs or not episodes:
        return list(beliefs), list(episodes)
    both: list[Candidate | EpisodeCandidate] = [*beliefs, *episodes]
    shift = offset(beliefs, episodes)
    n = len(beliefs)

    def similarity(i: int) -> float:
        """The candidate's similarity as compared across kinds."""
        raw = both[i].vector_similarity or 0.0
        return raw - shift if i < n else raw

    # Ties keep each statement's own order (its rank: the later said first), never the
    # order its rows happened to come in, which follows its plan.
    vector = sorted(
        (i for i, c in enumerate(both) if c.vector_rank is not None),
        key=lambda i: (-similarity(i), both[i].vector_rank),
    )
    text = sorted(
        (i for i, c in enumerate(both) if c.text_rank is not None),
        key=lambda i: (-(both[i].text_score or 0.0), both[i].text_rank),
    )
    vranks = {i: r for r, i in enumerate(vector, start=1)}
    tranks = {i: r for r, i in enumerate(text, start=1)}
    # Made whole rather than by _replace, which costs several times as much (dozens a run).
    return (
        [
            Candidate(c.belief, vranks.get(i), c.vector_similarity, tranks.get(i),
                      c.text_score, c.other_model)
            for i, c in enumerate(beliefs)
        ],
        [
            EpisodeCandidate(e.episode, vranks.get(n + i), e.vector_similarity,
                             tranks.get(n + i), e.text_score, e.day_rank)
            for i, e in enumerate(episodes)
        ],
    )  # fmt: skip


def relevant(candidates: Sequence[EpisodeCandidate]) -> list[EpisodeCandidate]:
    """The episodes relevant enough to be quoted: every one a word of the query found or
    said in the days it names, and those the vector found at least :data:`FLOOR_SHARE` as
    similar as the best of them (so that "Thanks, that's all for today." is not quoted for
    "Where do I live?" because budget remains). A share of the best, not a fixed
    similarity: embedders' scales differ. Beliefs have no floor: a user's notes are few,
    each a conclusion about them."""
    best = max((c.vector_similarity or 0.0 for c in candidates), default=0.0)
    floor = FLOOR_SHARE * best
    return [
        c
        for c in candidates
        if c.text_rank is not None
        or c.day_rank is not None
        or (c.vector_similarity or 0.0) >= floor
    ]


def score_episodes(
    candidates: Iterable[EpisodeCandidate],
    now: datetime,
    *,
    explain: bool = False,
    fusion: Fusion = Fusion(),
) -> list[ScoredEpisode]:
    """Fused scores of candidate episodes, best first (ties: the later one first); an
    episode saying exactly what a better-ranked one says is dropped.

    The same relevance as beliefs, plus :data:`DAY_WEIGHT` times the rank term of those
    said in the days the query names (:mod:`.named_days`), scaled by the recency of when it
    was said, by :data:`EPISODE_FACTOR` (episodes carry no confidence) and, for small talk
    (:mod:`.small_talk`), by :data:`SMALL_TALK_FACTOR`."""
    out: list[ScoredEpisode] = []
    for c in candidates:
        rel = relevance(c.vector_rank, c.text_rank, fusion, c.text_score)
        if c.day_rank is not None:
            rel += DAY_WEIGHT * (fusion.k + 1) / (fusion.k + c.day_rank)
        age = (now - c.episode.said_at).total_seconds() / 86400.0
        rec = 1.0 if age <= 0.0 else float(0.5 ** (age / HALF_LIFE_DAYS))
        fused = rel * (1.0 - fusion.w_recency + fusion.w_recency * rec) * EPISODE_FACTOR
        chat = is_small_talk(c.episode.content, c.episode.context)
        if chat:
            fused *= SMALL_TALK_FACTOR
        signals: dict[str, float] = {}
        if explain:
            signals = {
                "vector": c.vector_similarity if c.vector_similarity is not None else 0.0,
                "vector_rank": float(c.vector_rank or 0),
                "text": c.text_score if c.text_score is not None else 0.0,
                "text_rank": float(c.text_rank or 0),
                "day_rank": float(c.day_rank or 0),
                "relevance": rel,
                "recency": rec,
                "small_talk": float(chat),
                "fused": fused,
            }
        out.append(ScoredEpisode(c.episode, fused, signals))
    out.sort(key=lambda s: (-s.score, -s.episode.id))
    seen: set[str] = set()
    kept: list[ScoredEpisode] = []
    for s in out:
        if s.episode.content not in seen:  # passages are whitespace-collapsed already
            seen.add(s.episode.content)
            kept.append(s)
    return kept


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
