"""The read path: hybrid candidates, fused ranking, near-duplicate suppression, the block.

One SQL statement per call fetches everything: the top vector candidates (exact cosine
distance over the user's rows: no approximate index can drop one of them), the top full-text
matches (terms OR-ed, ranked by ``ts_rank``), the ids of near-duplicates among those
candidates, and the latest sources of each; and, when asked, one more value read in the same
snapshot by the caller's :class:`SnapshotProbe` (the job queue's barrier probe). It runs on
the database's direct pool (plain psycopg), the per-run path. Ranking (:mod:`.scoring`) and
packing (:mod:`.render`) run in Python on at most ``2 * pool`` rows. No LLM call is made
here.
"""

from __future__ import annotations

import logging
import math
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any, Generic, Literal, LiteralString, TypeVar

from ..checks import check_id, check_positive_int, is_utf8
from ..logs import get_logger, notice_once
from . import scoring
from .parts import EngineParts
from .records import Belief, RecallRequest, RecallResult, ScoredBelief, Source
from .render import Style, asks_when, render_block
from .rows import BELIEF_COLUMNS, belief_from_row, vector_literal

T = TypeVar("T")
log = get_logger(__name__)

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

# Candidates by similarity: an exact top-N over the user's rows found via (user_id, status),
# among the vectors of the query's model only (others are found by full text alone).
_VECTOR_CTE = """
vec AS (
  SELECT id, dist, row_number() OVER (ORDER BY dist, id DESC) AS rnk FROM (
    SELECT b.id, b.embedding <=> q.v AS dist FROM beliefs b, q
    WHERE b.user_id = %(user_id)s AND {scope} AND b.embedding_model = %(model)s
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
# Pairs of same-status candidates that say the same thing (each pair once: d.id > a.id);
# vectors are compared only when one model made both (CASE: never evaluated otherwise).
_NEAR_CTE = """
near AS (
  SELECT a.id, array_agg(d.id) AS near_ids FROM cand a JOIN cand d
    ON d.id > a.id AND d.status = a.status
   AND (d.norm_content = a.norm_content
        OR CASE WHEN a.embedding_model = d.embedding_model
                THEN {angle_filter}(a.embedding <=> d.embedding) <= %(dup_distance)s
                ELSE false END)
  GROUP BY a.id
)"""
_TAIL = f"""
SELECT {_OUT_COLS}, c.embedding_model, c.dist, v.rnk AS vector_rank, t.rnk AS text_rank,
       t.score AS text_score, n.near_ids, s.src_session, s.src_item, s.src_evidence, s.src_observed,
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


@dataclass(frozen=True)
class SnapshotProbe(Generic[T]):
    """One more value read by the recall statement, in the same snapshot as the beliefs.

    ``sql`` is a query returning one row with one column (aggregate it: ``json_agg``…);
    it may use ``%(user_id)s`` and the names in ``params``, which must not clash with the
    recall's own (prefix them). ``parse`` turns the value into ``T``. The job queue uses
    this for its barrier, so a recall that finds nothing pending needs no round trip of
    its own; the engine itself knows nothing of what is probed.
    """

    sql: LiteralString
    params: Mapping[str, Any]
    parse: Callable[[Any], T]


# The probe's row comes first, so there is one row even when there is no candidate.
_PROBE_TAIL = """
SELECT o.*, p.value AS probe_value FROM ({probe}) p(value) LEFT JOIN out o ON true"""


@cache
def _statement(scope: Scope, kind: Kind, probe: str | None = None) -> str:
    """The one statement for a scope and kind of query (built once, then cached)."""
    where = _SCOPES[scope]
    if kind == "recent":
        body = f"""
WITH cand AS MATERIALIZED (
  SELECT {_COLS}, b.norm_content, b.embedding, b.embedding_model, NULL::float8 AS dist
  FROM beliefs b
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
  SELECT c.*, acos(greatest(-1.0, least(1.0, 1.0 - c.dist))) AS angle FROM (
    SELECT {_COLS}, b.norm_content, b.embedding, b.embedding_model,
           CASE WHEN b.embedding_model = %(model)s THEN b.embedding <=> q.v END AS dist
    FROM beliefs b, q
    WHERE b.user_id = %(user_id)s AND b.id IN (SELECT id FROM ids)) c
),
{_NEAR_CTE.format(angle_filter="abs(a.angle - d.angle) <= %(dup_angle)s AND ").strip()}"""
    if probe is not None:
        return f"{body},\nout AS ({_TAIL}\n){_PROBE_TAIL.format(probe=probe)}"
    return body + _TAIL


def tsquery_terms(query: str) -> str:
    """The query's words OR-ed for ``to_tsquery`` (only word characters: no operators)."""
    words = dict.fromkeys(w.lower() for w in _TERM.findall(query))
    return " | ".join(list(words)[:MAX_QUERY_TERMS])


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
    parts: EngineParts,
    user_id: str,
    request: RecallRequest,
    pool: int,
    probe: SnapshotProbe[Any] | None,
) -> tuple[list[ScoredBelief], int, int, Any]:
    """All candidates, scored, best first, near-duplicates dropped; how many there were, and
    how many of them have vectors of another model; the probe's value (same snapshot)."""
    user_id = check_id("user_id", user_id)
    # The query is the user's message: cleaned (control characters, lone surrogates) and
    # clipped rather than refused, so that odd input never breaks a conversation.
    query = _CONTROL.sub(" ", request.query)[:MAX_QUERY_CHARS]
    query = query.encode("utf-8", "ignore").decode("utf-8") if not is_utf8(query) else query
    query = query.strip()
    as_of = request.as_of
    if as_of is not None:
        scope: Scope = "as_of_history" if request.include_history else "as_of"
    else:
        scope = "history" if request.include_history else "active"
    now = as_of or parts.now()
    model = parts.embedder.name
    params: dict[str, Any] = {
        "user_id": user_id,
        "pool": pool,
        "dup_distance": _DUP_DISTANCE,
        "model": model,
    }
    if probe is not None:
        params.update(probe.params)
    if as_of is not None:
        params["as_of"] = as_of
    if query:
        terms = tsquery_terms(query)
        kind: Kind = "hybrid" if terms else "vector"
        [vec] = await parts.embedder.embed([query])
        params.update(qvec=vector_literal(vec), terms=terms, dup_angle=_DUP_ANGLE)
    else:
        kind = "recent"
        params.update(now=now, half_life=scoring.HALF_LIFE_DAYS)
    statement = _statement(scope, kind, probe.sql if probe is not None else None)
    # One statement sees one snapshot: no BEGIN/ROLLBACK round trips needed around it.
    rows = await parts.db.direct.fetch(statement, params)
    probed = None
    if probe is not None:
        probed = probe.parse(rows[0]["probe_value"])
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
                other_model=row["embedding_model"] != model,
            )
        )
        for other in row["near_ids"] or ():
            near.setdefault(belief.id, []).append(other)
            near.setdefault(other, []).append(belief.id)
    ranked = scoring.score(candidates, now, as_of=as_of is not None, explain=request.explain)
    others = sum(c.other_model for c in candidates)
    if others:
        notice_once(
            log,
            f"other-model:{model}",
            logging.WARNING,
            "recall: some beliefs have vectors from another embedding model than %s and are "
            "found by full text only; run `mem01session reembed` to convert them",
            model,
        )
    return scoring.drop_near_duplicates(ranked, near), len(candidates), others, probed


async def rank(
    parts: EngineParts, user_id: str, request: RecallRequest, limit: int
) -> list[ScoredBelief]:
    """The ``limit`` best beliefs for the request, ranked as :func:`read_block` ranks them
    (its ``max_tokens`` is not used)."""
    check_positive_int("limit", limit)
    ranked, _, _, _ = await _ranked(parts, user_id, request, max(POOL, limit), None)
    return ranked[:limit]


async def read_block(
    parts: EngineParts,
    user_id: str,
    request: RecallRequest,
    probe: SnapshotProbe[Any] | None = None,
) -> tuple[RecallResult, Any]:
    """The memory block for the request: the best beliefs that fit ``max_tokens``, rendered;
    and the probe's value (None without a probe).

    The whole block fits ``max_tokens`` as counted by ``parts.token_counter``. When no
    belief is found or none fits, the text is ``""`` and ``tokens`` is 0.
    """
    started = time.perf_counter()
    ranked, considered, others, probed = await _ranked(parts, user_id, request, POOL, probe)
    style = Style(dates=asks_when(request.query), provenance=request.provenance)
    block = render_block(
        ranked, parts.token_counter, request.max_tokens, request.newer_turns, style
    )
    result = RecallResult(
        beliefs=block.packed,
        text=block.text,
        tokens=block.tokens,
        tokenizer=parts.token_counter.name,
        max_tokens=request.max_tokens,
        candidates=considered,
        other_model_candidates=others,
        latency_ms=(time.perf_counter() - started) * 1000.0,
        stale=False,
    )
    return result, probed


__all__: Sequence[str] = ("SnapshotProbe", "rank", "read_block", "tsquery_terms")
