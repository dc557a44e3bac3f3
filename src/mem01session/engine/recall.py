"""The read path: hybrid candidates, fused ranking, near-duplicate suppression, the block.

One SQL statement per call fetches everything: the top vector candidates (exact cosine
distance over the user's rows: no approximate index can drop one of them), the top
full-text matches (terms OR-ed, ranked by ``ts_rank``), the ids of near-duplicates among those
candidates, and the latest sources of each; for a session's barrier, also the user's
unfinished jobs (:func:`recall_with_progress`). It runs on the database's direct pool
(plain psycopg), the per-run path. Ranking (:mod:`.scoring`) and packing (:mod:`.render`)
run in Python on at most ``2 * pool`` rows. No LLM call is made here.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from functools import cache
from typing import TYPE_CHECKING, Any, Literal

from ..errors import ConfigError
from ..records import Belief, JobProgress, RecallResult, ScoredBelief, Source
from . import scoring
from .render import render_block
from .rows import BELIEF_COLUMNS, belief_from_row, vector_literal
from .users import check_user_id, is_utf8

if TYPE_CHECKING:
    from .core import BeliefEngine

# Candidates fetched from each retriever; enough to fill any sensible memory block.
POOL = 50
SOURCES_PER_BELIEF = 3
MAX_QUERY_TERMS = 64
MAX_QUERY_CHARS = 4000
# Two unit vectors with cosine >= c are at most acos(c) apart, so their angles to the
# query differ by at most that much: a cheap filter before the pairwise distance.
_DUP_DISTANCE = 1.0 - scoring.DUPLICATE_COSINE
_DUP_ANGLE = math.acos(scoring.DUPLICATE_COSINE) + 1e-6

Scope = Literal["active", "history", "as_of", "as_of_history"]
Kind = Literal["hybrid", "vector", "recent"]

_TERM = re.compile(r"\w+")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")

_SCOPES: dict[Scope, str] = {
    "active": "b.status = 'active'",
    "history": "TRUE",
    "as_of": "b.valid_from <= %(as_of)s AND (b.valid_to IS NULL OR b.valid_to > %(as_of)s)",
    "as_of_history": "b.valid_from <= %(as_of)s",
}
_COLS = ", ".join(f"b.{c.strip()}" for c in BELIEF_COLUMNS.split(","))
_OUT_COLS = ", ".join(f"c.{c.strip()}" for c in BELIEF_COLUMNS.split(","))

# Candidates by similarity: an exact top-N over the user's rows found via (user_id, status).
_VECTOR_CTE = """
vec AS (
  SELECT id, dist, row_number() OVER (ORDER BY dist, id DESC) AS rnk FROM (
    SELECT b.id, b.embedding <=> q.v AS dist FROM beliefs b, q
    WHERE b.user_id = %(user_id)s AND {scope} AND b.embedding IS NOT NULL
    ORDER BY 2, 1 DESC LIMIT %(pool)s) s
)"""
_TEXT_CTE = """
txt AS (
  SELECT id, score, row_number() OVER (ORDER BY score DESC, id DESC) AS rnk FROM (
    SELECT b.id, ts_rank(b.tsv, q.t) AS score FROM beliefs b, q
    WHERE b.user_id = %(user_id)s AND {scope} AND b.tsv @@ q.t
    ORDER BY 2 DESC, 1 DESC LIMIT %(pool)s) s
)"""
_NO_TEXT_CTE = """
txt AS (SELECT NULL::bigint AS id, NULL::real AS score, NULL::bigint AS rnk WHERE false)"""
_RECENCY = (
    "power(0.5, least(1000.0, greatest(0.0, extract(epoch FROM (%(now)s - GREATEST("
    "b.valid_from, b.last_confirmed_at, b.updated_at))) / 86400.0 / %(half_life)s)))"
)
# Pairs of same-status candidates that say the same thing (each pair once: d.id > a.id).
_NEAR_CTE = """
near AS (
  SELECT a.id, array_agg(d.id) AS near_ids FROM cand a JOIN cand d
    ON d.id > a.id AND d.status = a.status
   AND (d.norm_content = a.norm_content
        OR ({angle_filter}(a.embedding <=> d.embedding) <= %(dup_distance)s))
  GROUP BY a.id
)"""
_TAIL = f"""
SELECT {_OUT_COLS}, c.dist, v.rnk AS vector_rank, t.rnk AS text_rank, t.score AS text_score,
       n.near_ids, s.src_session, s.src_item, s.src_evidence, s.src_observed,
       s.src_extractor, s.src_job
FROM cand c
LEFT JOIN vec v ON v.id = c.id
LEFT JOIN txt t ON t.id = c.id
LEFT JOIN near n ON n.id = c.id
LEFT JOIN LATERAL (
  SELECT array_agg(x.session_id ORDER BY x.observed_at DESC, x.id DESC) AS src_session,
         array_agg(x.item_ref ORDER BY x.observed_at DESC, x.id DESC) AS src_item,
         array_agg(x.evidence ORDER BY x.observed_at DESC, x.id DESC) AS src_evidence,
         array_agg(x.observed_at ORDER BY x.observed_at DESC, x.id DESC) AS src_observed,
         array_agg(x.extractor ORDER BY x.observed_at DESC, x.id DESC) AS src_extractor,
         array_agg(x.job_id ORDER BY x.observed_at DESC, x.id DESC) AS src_job
  FROM (SELECT bs.id, bs.session_id, bs.item_ref, bs.evidence, bs.observed_at,
               bs.extractor, bs.job_id
        FROM belief_sources bs
        WHERE bs.user_id = %(user_id)s AND bs.belief_id = c.id
        ORDER BY bs.observed_at DESC, bs.id DESC LIMIT {SOURCES_PER_BELIEF}) x
) s ON true"""


# The barrier's probe, read in the same snapshot as the beliefs: the user's unfinished
# jobs and the watched ones. One row even when there is no candidate (LEFT JOIN).
_JOBS_TAIL = """
SELECT o.*, p.jobs FROM (
  SELECT coalesce(json_agg(json_build_array(j.id, j.status, j.last_error)), '[]') AS jobs
  FROM memory_jobs j
  WHERE j.user_id = %(user_id)s
    AND (j.status IN ('pending', 'running') OR j.id = ANY(%(watch)s))
) p LEFT JOIN out o ON true"""


@cache
def _statement(scope: Scope, kind: Kind, with_jobs: bool = False) -> str:
    """The one statement for a scope and kind of query (built once, then cached)."""
    where = _SCOPES[scope]
    if kind == "recent":
        body = f"""
WITH cand AS MATERIALIZED (
  SELECT {_COLS}, b.norm_content, b.embedding, NULL::float8 AS dist FROM beliefs b
  WHERE b.user_id = %(user_id)s AND {where}
  ORDER BY {scoring.W_RECENCY} * {_RECENCY} + {scoring.W_CONFIDENCE} * b.confidence DESC,
           b.id DESC
  LIMIT %(pool)s
),
vec AS (SELECT NULL::bigint AS id, NULL::bigint AS rnk WHERE false),
{_NO_TEXT_CTE.strip()},
{_NEAR_CTE.format(angle_filter="").strip()}"""
    else:
        text_cte = _TEXT_CTE if kind == "hybrid" else _NO_TEXT_CTE
        body = f"""
WITH q AS MATERIALIZED (
  SELECT CAST(%(qvec)s AS vector) AS v, to_tsquery('english', %(terms)s) AS t
),
{_VECTOR_CTE.format(scope=where).strip()},
{text_cte.format(scope=where).strip()},
ids AS (SELECT id FROM vec UNION SELECT id FROM txt),
cand AS MATERIALIZED (
  SELECT {_COLS}, b.norm_content, b.embedding, b.embedding <=> q.v AS dist,
         acos(greatest(-1.0, least(1.0, 1.0 - (b.embedding <=> q.v)))) AS angle
  FROM beliefs b, q
  WHERE b.user_id = %(user_id)s AND b.id IN (SELECT id FROM ids)
),
{_NEAR_CTE.format(angle_filter="abs(a.angle - d.angle) <= %(dup_angle)s AND ").strip()}"""
    if with_jobs:
        return f"{body},\nout AS ({_TAIL}\n){_JOBS_TAIL}"
    return body + _TAIL


def _positive(name: str, value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ConfigError(f"{name} must be a positive integer, got {value!r}")


def tsquery_terms(query: str) -> str:
    """The query's words OR-ed for ``to_tsquery`` (only word characters: no operators)."""
    words = dict.fromkeys(w.lower() for w in _TERM.findall(query))
    return " | ".join(list(words)[:MAX_QUERY_TERMS])


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _sources(row: Mapping[Any, Any]) -> tuple[Source, ...]:
    observed = row["src_observed"]
    if not observed:
        return ()
    return tuple(
        Source(
            session_id=session,
            item_ref=item,
            evidence=evidence,
            observed_at=at,
            extractor=extractor,
            job_id=job,
        )
        for session, item, evidence, at, extractor, job in zip(
            row["src_session"],
            row["src_item"],
            row["src_evidence"],
            observed,
            row["src_extractor"],
            row["src_job"],
            strict=True,
        )
    )


async def _ranked(
    engine: BeliefEngine,
    user_id: str,
    query: str,
    *,
    pool: int,
    include_history: bool,
    as_of: datetime | None,
    explain: bool,
    watch: Sequence[int] | None = None,
) -> tuple[list[ScoredBelief], int, JobProgress | None]:
    """All candidates, scored, best first, near-duplicates dropped; how many there were;
    and, when ``watch`` is given, the user's job progress read in the same snapshot."""
    user_id = check_user_id(user_id)
    if query is not None and not isinstance(query, str):
        raise ConfigError(f"query must be a string, got {type(query).__name__}")
    # The query is the user's message: cleaned (control characters, lone surrogates) and
    # clipped rather than refused, so that odd input never breaks a conversation.
    query = _CONTROL.sub(" ", query or "")[:MAX_QUERY_CHARS]
    query = query.encode("utf-8", "ignore").decode("utf-8") if not is_utf8(query) else query
    query = query.strip()
    if as_of is not None:
        as_of = _aware(as_of)
        scope: Scope = "as_of_history" if include_history else "as_of"
    else:
        scope = "history" if include_history else "active"
    now = as_of or _aware(engine.clock())
    params: dict[str, Any] = {"user_id": user_id, "pool": pool, "dup_distance": _DUP_DISTANCE}
    if watch is not None:
        params["watch"] = list(watch)
    if as_of is not None:
        params["as_of"] = as_of
    if query:
        terms = tsquery_terms(query)
        kind: Kind = "hybrid" if terms else "vector"
        [vec] = await engine.embedder.embed([query])
        params.update(qvec=vector_literal(vec), terms=terms, dup_angle=_DUP_ANGLE)
    else:
        kind = "recent"
        params.update(now=now, half_life=scoring.HALF_LIFE_DAYS)
    # One statement sees one snapshot: no BEGIN/ROLLBACK round trips needed around it.
    rows = await engine.db.direct.fetch(_statement(scope, kind, watch is not None), params)
    progress = None
    if watch is not None:
        progress = JobProgress.from_rows(rows[0]["jobs"], watch)
        rows = [r for r in rows if r["id"] is not None]
    candidates: list[scoring.Candidate] = []
    near: dict[int, list[int]] = {}
    for row in rows:
        belief: Belief = belief_from_row(row, _sources(row))
        dist = row["dist"]
        candidates.append(
            scoring.Candidate(
                belief=belief,
                vector_rank=row["vector_rank"],
                vector_similarity=None if dist is None else 1.0 - float(dist),
                text_rank=row["text_rank"],
                text_score=None if row["text_score"] is None else float(row["text_score"]),
            )
        )
        for other in row["near_ids"] or ():
            near.setdefault(belief.id, []).append(other)
            near.setdefault(other, []).append(belief.id)
    ranked = scoring.score(candidates, now, as_of=as_of is not None, explain=explain)
    return scoring.drop_near_duplicates(ranked, near), len(candidates), progress


async def search(
    engine: BeliefEngine,
    user_id: str,
    query: str,
    *,
    limit: int = 10,
    include_history: bool = False,
    as_of: datetime | None = None,
    explain: bool = False,
) -> list[ScoredBelief]:
    """The ``limit`` best beliefs for ``query``, ranked as :func:`recall` ranks them."""
    _positive("limit", limit)
    ranked, _, _ = await _ranked(
        engine,
        user_id,
        query,
        pool=max(POOL, limit),
        include_history=include_history,
        as_of=as_of,
        explain=explain,
    )
    return ranked[:limit]


async def recall(
    engine: BeliefEngine,
    user_id: str,
    query: str,
    *,
    max_tokens: int = 800,
    include_history: bool = False,
    as_of: datetime | None = None,
    explain: bool = False,
) -> RecallResult:
    """The memory block for ``query``: the best beliefs that fit ``max_tokens``, rendered.

    The whole block fits ``max_tokens`` as counted by ``engine.token_counter``. When no
    belief is found or none fits, the text is ``""`` and ``tokens`` is 0.
    """
    result, _ = await _recall(
        engine, user_id, query, max_tokens, include_history, as_of, explain, watch=None
    )
    return result


async def recall_with_progress(
    engine: BeliefEngine,
    user_id: str,
    query: str,
    *,
    watch: Sequence[int] = (),
    max_tokens: int = 800,
    include_history: bool = False,
    as_of: datetime | None = None,
    explain: bool = False,
) -> tuple[RecallResult, JobProgress]:
    """:func:`recall`, plus the user's unfinished jobs and the state of the ``watch``-ed
    ones, read by the same statement: a barrier that finds nothing pending knows the
    recall is current, without a round trip of its own."""
    result, progress = await _recall(
        engine, user_id, query, max_tokens, include_history, as_of, explain, watch=watch
    )
    assert progress is not None
    return result, progress


async def _recall(
    engine: BeliefEngine,
    user_id: str,
    query: str,
    max_tokens: int,
    include_history: bool,
    as_of: datetime | None,
    explain: bool,
    *,
    watch: Sequence[int] | None,
) -> tuple[RecallResult, JobProgress | None]:
    started = time.perf_counter()
    _positive("max_tokens", max_tokens)
    ranked, considered, progress = await _ranked(
        engine,
        user_id,
        query,
        pool=POOL,
        include_history=include_history,
        as_of=as_of,
        explain=explain,
        watch=watch,
    )
    block = render_block(ranked, engine.token_counter, max_tokens)
    result = RecallResult(
        beliefs=block.packed,
        text=block.text,
        tokens=block.tokens,
        tokenizer=engine.token_counter.name,
        max_tokens=max_tokens,
        candidates=considered,
        latency_ms=(time.perf_counter() - started) * 1000.0,
        stale=False,
    )
    return result, progress


__all__: Sequence[str] = (
    "check_user_id",
    "recall",
    "recall_with_progress",
    "search",
    "tsquery_terms",
)
