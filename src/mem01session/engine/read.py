"""The read path: candidates (beliefs: :mod:`.candidates`; episodes:
:mod:`.episode_candidates`), fused ranking (:mod:`.scoring`), near-duplicate suppression,
and the token-budgeted block (:mod:`.render`).

Ranking and packing run in Python on the candidates of one statement. No LLM call is
made here.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..checks import check_id, check_positive_int, is_utf8
from ..days.named import Span, named_span, unnamed
from ..embeddings import Vector
from ..logs import get_logger, notice_once
from . import scoring
from .candidates import (
    MAX_QUERY_CHARS,
    POOL,
    SnapshotProbe,
    fetch,
    pool_for,
    scope_of,
    tsquery_terms,
)
from .engine_parts import EngineParts
from .episode_candidates import fetch_episodes
from .lines import Style, asks_from_now, asks_when
from .records import Episode, RecallRequest, RecallResult, ScoredBelief, ScoredEpisode
from .render import render_block

log = get_logger(__name__)

_FUSION = scoring.Fusion()  # the library's
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def clean_query(query: str) -> str:
    """The user's message as a query: control characters and lone surrogates removed,
    clipped rather than refused, so that odd input never breaks a conversation (a message
    longer than ``MAX_QUERY_CHARS`` is read by its start and its end)."""
    if len(query) > MAX_QUERY_CHARS:
        half = MAX_QUERY_CHARS // 2
        query = f"{query[:half]}\n{query[-half:]}"
    text = _CONTROL.sub(" ", query)
    text = text.encode("utf-8", "ignore").decode("utf-8") if not is_utf8(text) else text
    return text.strip()


@dataclass(frozen=True)
class _Ranked:
    """Both kinds of candidates, scored, best first; what the recall result reports of
    them; the probe's value (same snapshot as the beliefs); and the query as read."""

    beliefs: list[ScoredBelief]
    episodes: list[ScoredEpisode]
    considered: int
    other_model: int
    probed: Any
    query: str
    days: Span | None  # the days the query names


async def _ranked(
    parts: EngineParts,
    user_id: str,
    request: RecallRequest,
    pool: int,
    probe: SnapshotProbe[Any] | None,
    sources: bool,
    vector: Vector | None = None,
    fusion: scoring.Fusion = _FUSION,
    named: bool = True,
    block: bool = False,
) -> _Ranked:
    """All candidates, scored, best first, near-duplicates dropped. Beliefs and episodes
    are read by two statements at once on the direct pool; the probe rides on the beliefs'
    (which runs, fetching none, even when only episodes are asked for). ``named``: whether
    the days the query names count (:mod:`.named_days`): the episodes said then come first,
    and the beliefs that no longer hold are read too (what held then). ``block``: for a
    block, whose quotes must be relevant enough to be packed (:func:`scoring.relevant`)."""
    user_id = check_id("user_id", user_id)
    as_of = request.as_of
    now = as_of or parts.now()
    query = clean_query(request.query)
    days = named_span(query, now, request.zone) if named and query else None
    scope = scope_of(request.include_history or days is not None, as_of)
    if not query:
        vector = None
    elif vector is None:
        vector = (await parts.embedder.embed([query]))[0]
    quoting = request.kinds != "beliefs" and parts.episodes.enabled and vector is not None
    words = unnamed(query, days)  # the words to match: the days named are read apart
    fetching = fetch(
        parts,
        user_id,
        query,
        scope,
        now,
        pool=pool if request.kinds != "episodes" else 0,
        as_of=as_of,
        probe=probe,
        sources=sources,
        vector=vector,
        words=words,
    )
    if quoting:
        assert vector is not None
        got, quotes = await asyncio.gather(
            fetching,
            fetch_episodes(
                parts, user_id, words, vector, now, pool=pool, as_of=as_of,
                text=bool(tsquery_terms(words)), days=days,
            ),
        )  # fmt: skip
    else:
        got, quotes = await fetching, []
    considered = len(got.candidates) + len(quotes)
    if block:
        quotes = scoring.relevant(quotes)
    beliefs, quotes = scoring.rank_jointly(got.candidates, quotes)
    ranked = scoring.score(
        beliefs,
        now,
        as_of=as_of is not None,
        explain=request.explain,
        fusion=fusion,
        days=(days.start, days.end) if days is not None else None,
    )
    if got.other_model:
        notice_once(
            log,
            f"other-model:{parts.embedder.name}",
            logging.WARNING,
            "recall: some beliefs have vectors from another embedding model than %s and are "
            "found by full text only; run `mem01session reembed` to convert them",
            parts.embedder.name,
        )
    kept = scoring.drop_near_duplicates(ranked, got.near)
    asked = _said(query)
    episodes = scoring.score_episodes(
        [
            q
            for q in quotes
            if not _read_already(q.episode, request) and _said(q.episode.content) != asked
        ],
        now,
        explain=request.explain,
        fusion=fusion,
    )
    return _Ranked(kept, episodes, considered, got.other_model, got.probed, query, days)


def _said(text: str) -> str:
    """What a message says, for telling a repeat: case, spacing and end marks ignored."""
    return " ".join(text.casefold().split()).rstrip("?!. ")


def _read_already(episode: Episode, request: RecallRequest) -> bool:
    """Whether the model reads this episode's words in the conversation asking (its
    transcript holds them: quoting them again would only take room)."""
    return (
        episode.session_id == request.conversation
        and " ".join(episode.content.split()) in request.conversation_text
    )


async def rank(
    parts: EngineParts,
    user_id: str,
    request: RecallRequest,
    limit: int,
    *,
    vector: Vector | None = None,
    sources: bool = True,
) -> list[ScoredBelief]:
    """The ``limit`` best beliefs for the request, ranked as :func:`read_block` ranks them
    (its ``max_tokens`` is not used; the days the query names change nothing: the write
    path asks with a user's message). ``vector``: the query's, if already embedded by
    ``parts.embedder``; ``sources=False`` leaves the beliefs' sources unread."""
    check_positive_int("limit", limit)
    request = replace(request, kinds="beliefs")
    ranked = await _ranked(
        parts, user_id, request, max(POOL, limit), None, sources, vector, named=False
    )
    return ranked.beliefs[:limit]


async def read_block(
    parts: EngineParts,
    user_id: str,
    request: RecallRequest,
    probe: SnapshotProbe[Any] | None = None,
    fusion: scoring.Fusion = _FUSION,
) -> tuple[RecallResult, Any]:
    """The memory block for the request: the best beliefs that fit ``max_tokens``, rendered;
    and the probe's value (None without a probe). ``fusion``: how the signals are fused
    (the default's; benchmarks compare others).

    The whole block fits ``max_tokens`` as counted by ``parts.token_counter``. When no
    belief is found or none fits, the text is ``""`` and ``tokens`` is 0. The beliefs carry
    their sources when the block shows them (``provenance`` other than ``"none"``) or with
    ``explain``; otherwise none are read (they cost more than the rest of the statement).
    """
    started = time.perf_counter()
    pool = pool_for(request.max_tokens)
    sources = request.explain or request.provenance != "none"
    ranked = await _ranked(parts, user_id, request, pool, probe, sources, fusion=fusion, block=True)
    style = _style(parts, request, ranked.query, ranked.days is not None)
    block = render_block(
        ranked.beliefs,
        parts.token_counter,
        request.max_tokens,
        request.newer_turns,
        style,
        episodes=ranked.episodes,
        pending_turns=request.pending_turns,
        pending_said=request.pending_said,
    )
    result = RecallResult(
        beliefs=block.packed,
        text=block.text,
        tokens=block.tokens,
        tokenizer=parts.token_counter.name,
        max_tokens=request.max_tokens,
        candidates=ranked.considered,
        other_model_candidates=ranked.other_model,
        latency_ms=(time.perf_counter() - started) * 1000.0,
        stale=False,
        episodes=block.quoted,
        pending_turns=request.pending_turns,
        pending_quoted=block.pending_quoted,
    )
    return result, ranked.probed


def _style(parts: EngineParts, request: RecallRequest, query: str, names_days: bool) -> Style:
    """How the block of ``request`` is written: under a question about time or one that
    names days (``names_days``: "on Monday"), with dates (what held then shows since and
    until when); under one reckoned from today ("how long ago"), with the user's day today
    too (not for a read ``as_of`` another moment)."""
    today = None
    if request.as_of is None and asks_from_now(query):
        today = parts.now().astimezone(request.zone).date()
    dates = today is not None or names_days or asks_when(query)
    return Style(dates, request.provenance, request.zone, today)


def reframe(parts: EngineParts, result: RecallResult, request: RecallRequest) -> RecallResult:
    """``result`` rendered again with the notes of ``request`` (``newer_turns``,
    ``pending_turns``, ``pending_said``): the same records and quotes, the lowest-scored
    left out if the notes take their room. No statement, no embedding: what was read is
    reused."""
    query = clean_query(request.query)
    days = named_span(query, request.as_of or parts.now(), request.zone) if query else None
    style = _style(parts, request, query, days is not None)
    block = render_block(
        result.beliefs,
        parts.token_counter,
        request.max_tokens,
        request.newer_turns,
        style,
        episodes=result.episodes,
        pending_turns=request.pending_turns,
        pending_said=request.pending_said,
    )
    return replace(
        result,
        beliefs=block.packed,
        episodes=block.quoted,
        text=block.text,
        tokens=block.tokens,
        pending_turns=request.pending_turns,
        pending_quoted=block.pending_quoted,
    )


__all__: Sequence[str] = (
    "SnapshotProbe", "clean_query", "rank", "read_block", "reframe", "tsquery_terms",
)  # fmt: skip
