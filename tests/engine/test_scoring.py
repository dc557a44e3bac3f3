"""Fusion of the read path's signals: pure functions, no database."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from mem01session.engine.records import Belief, BeliefStatus, Episode
from mem01session.engine.scoring import (
    SMALL_TALK_FACTOR,
    TEXT_WEIGHT,
    Candidate,
    EpisodeCandidate,
    Fusion,
    held_during,
    offset,
    rank_jointly,
    relevance,
    relevant,
    score,
    score_episodes,
)
from tests.engine.seed import NOW


def belief(bid: int, *, age_days: float = 0.0, confidence: float = 0.8) -> Belief:
    at = NOW - timedelta(days=age_days)
    return Belief(bid, "u", f"b{bid}", None, "active", confidence, at, None, at, at, 1)


def test_the_top_of_both_lists_is_fully_relevant() -> None:
    assert relevance(1, 1, Fusion(text_weight=1.0), text_score=1.0) == pytest.approx(1.0)
    assert relevance(1, 1, Fusion(), text_score=1.0) == pytest.approx((1 + TEXT_WEIGHT) / 2)
    assert relevance(None, None, Fusion()) == 0.0


def test_a_text_match_weighs_text_weight_times_its_coverage() -> None:
    # The share of the question a match covers is rarely near 1: weighed once, the text
    # list counted for less than the vector list at the same rank.
    half = relevance(None, 1, Fusion(), text_score=0.5)
    assert half == pytest.approx(TEXT_WEIGHT * 0.5 / 2)
    assert half == pytest.approx(relevance(1, None, Fusion()) * TEXT_WEIGHT * 0.5)


def test_a_text_match_on_a_small_share_of_the_query_adds_nothing() -> None:
    fusion = Fusion(min_coverage=0.2)
    assert relevance(5, 1, fusion, text_score=0.1) == relevance(5, None, fusion)
    assert relevance(5, 1, fusion, text_score=0.3) > relevance(5, None, fusion)


def test_a_fuller_text_match_counts_for_more() -> None:
    fuller, partial = (relevance(None, 1, Fusion(), text_score=s) for s in (0.9, 0.4))
    assert fuller > partial


def test_recency_reorders_near_neighbours_but_not_distant_ranks() -> None:
    fresh, stale = belief(1), belief(2, age_days=3650)
    neighbours = [
        Candidate(fresh, vector_rank=41, vector_similarity=None, text_rank=None, text_score=None),
        Candidate(stale, vector_rank=40, vector_similarity=None, text_rank=None, text_score=None),
    ]
    assert [s.belief.id for s in score(neighbours, NOW)] == [1, 2]
    distant = [
        Candidate(fresh, vector_rank=90, vector_similarity=None, text_rank=None, text_score=None),
        Candidate(stale, vector_rank=2, vector_similarity=None, text_rank=None, text_score=None),
    ]
    assert [s.belief.id for s in score(distant, NOW)] == [2, 1]


def test_without_a_query_recency_and_confidence_alone_order() -> None:
    candidates = [
        Candidate(belief(1, age_days=400), None, None, None, None),
        Candidate(belief(2, age_days=1), None, None, None, None),
        Candidate(belief(3, age_days=1, confidence=0.3), None, None, None, None),
    ]
    ranked = score(candidates, NOW)
    order = [s.belief.id for s in ranked]
    assert order[0] == 2  # newer than 1, more confident than 3
    assert all(s.score > 0 for s in ranked)


def _held(bid: int, start: float, end: float | None, status: BeliefStatus = "active") -> Belief:
    """A belief said ``start`` days before NOW, ended ``end`` days before it (None: not)."""
    said = NOW - timedelta(days=start)
    ended = None if end is None else NOW - timedelta(days=end)
    return Belief(bid, "u", f"b{bid}", None, status, 0.8, said, ended, said, ended or said, 1)


def test_held_during_means_said_by_then_and_not_ended_before() -> None:
    days = (NOW - timedelta(days=3), NOW - timedelta(days=2))  # one day, three days ago
    assert held_during(_held(1, 10, None), *days)  # said before, still holds
    assert held_during(_held(2, 10, 2.5, "superseded"), *days)  # ended during those days
    assert held_during(_held(3, 2.5, None), *days)  # said during them
    assert not held_during(_held(4, 10, 4, "superseded"), *days)  # ended before them
    assert not held_during(_held(5, 1, None), *days)  # first said after them: not known
    assert not held_during(_held(6, 10, 3, "invalidated"), *days)  # ended as they began


def test_named_days_rank_what_held_then_above_what_holds_now() -> None:
    moved_at = NOW - timedelta(days=1)
    then = _held(1, 10, 1, "superseded")  # lived there until yesterday
    now_ = Belief(2, "u", "b2", None, "active", 0.8, moved_at, None, moved_at, moved_at, 1)
    # the current one is the stronger match, by a little
    candidates = [Candidate(now_, 1, None, None, None), Candidate(then, 2, None, None, None)]
    assert [s.belief.id for s in score(candidates, NOW)] == [2, 1]
    last_week = (NOW - timedelta(days=7), NOW - timedelta(days=6))
    assert [s.belief.id for s in score(candidates, NOW, days=last_week)] == [1, 2]
    today = (NOW - timedelta(hours=1), NOW + timedelta(hours=1))  # only the new one held
    assert [s.belief.id for s in score(candidates, NOW, days=today)] == [2, 1]
    # A read as of another moment ranks by relevance alone, days or not.
    assert [s.belief.id for s in score(candidates, NOW, as_of=True, days=last_week)] == [2, 1]


def said(eid: int, content: str = "words", *, context: str | None = None) -> Episode:
    return Episode(eid, "u", "c", eid, 0, 0, "user", content, NOW, context=context)


def found(c: Belief | Episode, similarity: float | None, text_rank: int | None = None) -> Any:
    """A candidate of either kind; the vector rank is set by rank_jointly."""
    text_score = None if text_rank is None else 0.5
    if isinstance(c, Belief):
        return Candidate(
            c, 1 if similarity is not None else None, similarity, text_rank, text_score
        )
    rank = 1 if similarity is not None else None
    return EpisodeCandidate(c, rank, similarity, text_rank, text_score)


def test_each_kind_is_ranked_from_its_typical_similarity() -> None:
    # Beliefs sit 0.3 above episodes across the board (short statements in a question's
    # words): compared raw, all of them would outrank every episode.
    beliefs = [found(belief(i), 0.70 - i / 100) for i in range(1, 26)]
    episodes = [found(said(100 + i), 0.40 - i / 100) for i in range(1, 26)]
    assert offset(beliefs, episodes) == pytest.approx(0.30)
    ranked_beliefs, ranked_episodes = rank_jointly(beliefs, episodes)
    best_episode = ranked_episodes[0].vector_rank
    assert best_episode is not None and best_episode <= 2  # interleaved, not after 25 beliefs
    assert ranked_beliefs[0].vector_rank == 1


def test_with_few_of_one_kind_both_are_ranked_raw() -> None:
    # A user's two beliefs are no kind's typical similarity: compared as they are.
    beliefs = [found(belief(i), 0.70) for i in (1, 2)]
    episodes = [found(said(100 + i), 0.41 - i / 100) for i in range(1, 26)]
    assert offset(beliefs, episodes) == 0.0
    ranked_beliefs, _ = rank_jointly(beliefs, episodes)
    assert sorted(b.vector_rank for b in ranked_beliefs) == [1, 2]


def test_equal_matches_keep_their_statements_order_whatever_order_the_rows_came_in() -> None:
    # Three passages covering the query's words alike: the statement ranked them (by
    # recency, ids descending); its rows may come back in any order, as its plan has them.
    beliefs = [found(belief(1), 0.5, text_rank=1)]
    episodes = [found(said(100 + i), 0.3, text_rank=rank) for i, rank in ((1, 3), (2, 2), (3, 1))]
    for rows in (episodes, episodes[::-1], [episodes[1], episodes[2], episodes[0]]):
        _, ranked = rank_jointly(beliefs, rows)
        by_id = {e.episode.id: e.text_rank for e in ranked}
        assert by_id == {103: 2, 102: 3, 101: 4}


def test_a_quote_next_to_nothing_like_the_question_is_not_packed() -> None:
    thanks = found(said(1, "Thanks, that's all for today."), 0.016)
    kept = relevant([found(said(2, "I live in Lisbon."), 0.62), thanks])
    assert [c.episode.id for c in kept] == [2]
    # Found by a word of the question, or said in the days it names: relevant anyway.
    worded = found(said(3, "Thanks for the Lisbon tips."), 0.01, text_rank=1)
    that_day = found(said(4, "Bought boots."), 0.01)._replace(day_rank=1)
    assert len(relevant([found(said(2), 0.62), worded, that_day])) == 3
    assert relevant([]) == []


def test_small_talk_ranks_below_a_statement_as_relevant() -> None:
    statement = found(said(1, "I ran my first marathon in May."), 0.5)._replace(vector_rank=1)
    chat = found(said(2, "Wow! What got you into running?"), 0.5)._replace(vector_rank=1)
    answer = found(said(3, "Yes!", context="Did you finish it?"), 0.5)._replace(vector_rank=1)
    scored = {s.episode.id: s.score for s in score_episodes([statement, chat, answer], NOW)}
    assert scored[2] == pytest.approx(scored[1] * SMALL_TALK_FACTOR)
    assert scored[3] == pytest.approx(scored[1])  # an answer is no small talk
