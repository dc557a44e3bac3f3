"""The read path's one statement: candidate beliefs and their signals, in one snapshot.

It fetches the top vector candidates (exact cosine distance over the user's rows, among
vectors of the embedder's model: no approximate index can drop one of them), the top
full-text matches, when asked the latest sources of each, and each candidate's
near-duplicate links (written with its vector, :mod:`.near`); and, when asked, one more
value read in the same snapshot by the caller's :class:`SnapshotProbe` (the job queue's
barrier probe). It runs on the database's direct pool (plain psycopg), the per-run path.

Full-text matches are scored by how rare their words are among the user's own active
beliefs (``belief_terms``, kept by the write path): each query word weighs
``ln((N + 1) / (n + 0.5))`` for a user with ``N`` active beliefs, ``n`` of which hold it,
and a word held by at least :data:`COMMON_SHARE` of them (the user's own name, typically;
and by at least :data:`COMMON_MIN`) is left out of the query, since it tells nothing about
which belief is meant. A match's ``text_score`` is the share of the query's weight it
covers.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from typing import Any, Generic, Literal, LiteralString, TypeVar

from ..db.vectors import BinaryVector
from . import scoring
from .engine_parts import EngineParts
from .near import Twin, near_duplicates
from .records import Source
from .row_mapping import BELIEF_COLUMNS, BELIEF_FIELDS, belief_from_values

T = TypeVar("T")
# Candidates fetched from each retriever: at least POOL, and enough to fill the budget
# (a record costs some 15 tokens; a larger block needs more candidates).
POOL = 50
TOKENS_PER_CANDIDATE = 16
MAX_POOL = 400


def pool_for(max_tokens: int) -> int:
    """How many candidates each retriever fetches for a block of ``max_tokens``."""
    return min(MAX_POOL, max(POOL, max_tokens // TOKENS_PER_CANDIDATE))


SOURCES_PER_BELIEF = 3
# A long message's words beyond this many are left out of the text query: the words the
# user's records hold are kept first, the rarest first (the others match nothing).
MAX_QUERY_TERMS = 64
# A longer message is read by its start and its end, where a question after a pasted text is.
MAX_QUERY_CHARS = 4000
# A word in at least this share of the user's active beliefs (and in at least COMMON_MIN of
# them: a user with three beliefs has no common words) is left out of the text query.
COMMON_SHARE = 0.5
COMMON_MIN = 3

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
# among the vectors of the query's model only (others are found by full text alone). The
# rows come whole, so only full-text matches outside them are looked up again.
_VECTOR_CTE = f"""
vec AS MATERIALIZED (
  SELECT s.*, row_number() OVER (ORDER BY s.dist, s.id DESC) AS vector_rank FROM (
    SELECT {_COLS}, b.norm_content, b.embedding_model, b.embedding <=> q.v AS dist
    FROM beliefs b, q
    WHERE b.user_id = %(user_id)s AND {{scope}} AND b.embedding_model = %(model)s
    ORDER BY dist, b.id DESC LIMIT %(pool)s) s
)"""
# The query's words (as the full-text column makes them), each weighed by its rarity among
# the user's active beliefs; the common ones left out. Then the matches, scored by the
# share of that weight they cover.
_TEXT_CTE = """
w AS MATERIALIZED (
  SELECT l.lexeme, ln((n.n + 1.0) / (coalesce(t.beliefs, 0) + 0.5)) AS idf
  FROM (SELECT DISTINCT unnest(tsvector_to_array(to_tsvector('english', %(query)s))) AS lexeme) l
  CROSS JOIN (SELECT greatest(1, coalesce(max(u.active_beliefs), 0)) AS n
              FROM memory_users u WHERE u.user_id = %(user_id)s) n
  LEFT JOIN LATERAL (  -- one index probe per query word, not a scan of the user's words
    SELECT t.beliefs FROM belief_terms t WHERE t.user_id = %(user_id)s AND t.lexeme = l.lexeme
  ) t ON true
  WHERE coalesce(t.beliefs, 0) < greatest(%(common_share)s * n.n, %(common_min)s)
  ORDER BY coalesce(t.beliefs, 0) = 0, idf DESC, l.lexeme  -- see MAX_QUERY_TERMS
  LIMIT %(max_terms)s
),
tq AS MATERIALIZED (
  SELECT string_agg(quote_literal(lexeme), ' | ')::tsquery AS t, sum(idf) AS total FROM w
),
txt AS (
  SELECT id, score, row_number() OVER (ORDER BY score DESC, id DESC) AS rnk FROM (
    SELECT b.id,
           (SELECT sum(w.idf) FROM w WHERE w.lexeme = ANY(tsvector_to_array(b.tsv))) / tq.total
             AS score
    FROM beliefs b, tq
    WHERE b.user_id = %(user_id)s AND {scope} AND b.tsv @@ tq.t
    ORDER BY 2 DESC, 1 DESC LIMIT %(pool)s) s
)"""
_NO_TEXT_CTE = """
txt AS (SELECT NULL::bigint AS id, NULL::real AS score, NULL::bigint AS rnk WHERE false)"""
_RECENCY = (
    "power(0.5, least(1000.0, greatest(0.0, extract(epoch FROM (%(now)s - GREATEST("
    "b.valid_from, b.last_confirmed_at, b.updated_at))) / 86400.0 / %(half_life)s)))"
)
_TAIL = f"""
SELECT {_OUT_COLS}, c.embedding_model, c.dist, c.vector_rank, t.rnk AS text_rank,
       t.score AS text_score, c.norm_content,
       ARRAY(SELECT bt.twin_id FROM belief_twins bt
             WHERE bt.user_id = %(user_id)s AND bt.belief_id = c.id) AS twins{{sources}}
FROM cand c
LEFT JOIN txt t ON t.id = c.id"""
# Each candidate's latest sources, when the caller wants them (the default block does not
# show them, and these lookups are a large share of the statement's cost).
_SOURCE_COLS = """, s.src_session,
       s.src_item, s.src_evidence, s.src_observed, s.src_extractor, s.src_job"""
_SOURCES_JOIN = f"""
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
def _statement(scope: Scope, kind: Kind, probe: str | None = None, sources: bool = True) -> str:
    """The one statement for a scope and kind of query, with or without each candidate's
    latest sources (built once, then cached)."""
    where = _SCOPES[scope]
    if kind == "recent":
        body = f"""
WITH cand AS MATERIALIZED (
  SELECT {_COLS}, b.norm_content, b.embedding_model, NULL::float8 AS dist,
         NULL::bigint AS vector_rank
  FROM beliefs b
  WHERE b.user_id = %(user_id)s AND {where}
  ORDER BY (1.0 - {scoring.W_RECENCY} + {scoring.W_RECENCY} * {_RECENCY})
           * (1.0 - {scoring.W_CONFIDENCE} + {scoring.W_CONFIDENCE} * b.confidence) DESC,
           b.id DESC
  LIMIT %(pool)s
),
{_NO_TEXT_CTE.strip()}"""
    else:
        text_cte = _TEXT_CTE if kind == "hybrid" else _NO_TEXT_CTE
        body = f"""
WITH q AS MATERIALIZED (SELECT CAST(%(qvec)s AS vector) AS v),
{_VECTOR_CTE.format(scope=where).strip()},
{text_cte.format(scope=where).strip()},
cand AS (
  SELECT * FROM vec
  UNION ALL
  SELECT {_COLS}, b.norm_content, b.embedding_model,
         CASE WHEN b.embedding_model = %(model)s THEN b.embedding <=> q.v END, NULL::bigint
  FROM txt t JOIN beliefs b ON b.user_id = %(user_id)s AND b.id = t.id, q
  WHERE t.id NOT IN (SELECT id FROM vec)
)"""
    tail = _TAIL.format(sources=_SOURCE_COLS if sources else "") + (
        _SOURCES_JOIN if sources else ""
    )
    if probe is not None:
        return f"{body},\nout AS ({tail}\n){_PROBE_TAIL.format(probe=probe)}"
    return body + tail


def tsquery_terms(query: str) -> str:
    """The query's words OR-ed for ``to_tsquery`` (only word characters: no operators)."""
    words = dict.fromkeys(w.lower() for w in _TERM.findall(query))
    return " | ".join(list(words)[:MAX_QUERY_TERMS])


def _sources(arrays: Sequence[Any]) -> tuple[Source, ...]:
    """A candidate's latest sources from the statement's six ``src_*`` arrays."""
    sessions, items, evidence, observed, extractors, jobs = arrays
    if not observed:
        return ()
    return tuple(
        Source(session_id=a, item_ref=b, evidence=c, observed_at=d, extractor=e, job_id=f)
        for a, b, c, d, e, f in zip(
            sessions, items, evidence, observed, extractors, jobs, strict=True
        )
    )


@dataclass(frozen=True)
class Fetched:
    """The statement's answer: candidates with their signals, near-duplicate pairs, how many
    candidates have vectors of another model, and the probe's value."""

    candidates: list[scoring.Candidate]
    near: dict[int, list[int]]
    other_model: int
    probed: Any


def scope_of(include_history: bool, as_of: datetime | None) -> Scope:
    if as_of is not None:
        return "as_of_history" if include_history else "as_of"
    return "history" if include_history else "active"


async def fetch(
    parts: EngineParts,
    user_id: str,
    query: str,
    scope: Scope,
    now: datetime,
    *,
    pool: int,
    as_of: datetime | None = None,
    probe: SnapshotProbe[Any] | None = None,
    common_share: float = COMMON_SHARE,
    sources: bool = True,
    vector: Sequence[float] | None = None,
    words: str | None = None,
) -> Fetched:
    """Run the statement for ``query`` (already cleaned) over the user's rows in ``scope``;
    without ``sources`` the candidates' beliefs carry none. ``vector`` is the query's
    embedding when the caller made it already; ``words``: what the full-text list matches
    (default: the query)."""
    words = query if words is None else words
    model = parts.embedder.name
    params: dict[str, Any] = {
        "user_id": user_id,
        "pool": pool,
        "model": model,
    }
    if probe is not None:
        params.update(probe.params)
    if as_of is not None:
        params["as_of"] = as_of
    if query:
        kind: Kind = "hybrid" if tsquery_terms(words) else "vector"
        [vec] = [vector] if vector is not None else await parts.embedder.embed([query])
        params.update(
            qvec=BinaryVector(vec),
            query=words,
            max_terms=MAX_QUERY_TERMS,
            common_share=common_share,
            common_min=COMMON_MIN,
        )
    else:
        kind = "recent"
        params.update(now=now, half_life=scoring.HALF_LIFE_DAYS)
    statement = _statement(scope, kind, probe.sql if probe is not None else None, sources)
    # One statement sees one snapshot: no BEGIN/ROLLBACK round trips needed around it.
    names, rows = await parts.db.direct.fetch_tuples(statement, params, binary=True)
    at = {name: i for i, name in enumerate(names)}
    probed = None
    if probe is not None:
        probed = probe.parse(rows[0][at["probe_value"]])
        rows = [r for r in rows if r[0] is not None]  # the probe's row without a candidate
    i_model, i_dist, i_vrank, i_trank, i_tscore, i_norm, i_twins = (
        at[name]
        for name in (
            "embedding_model", "dist", "vector_rank", "text_rank", "text_score",
            "norm_content", "twins",
        )
    )  # fmt: skip
    i_src = at.get("src_session")  # the six src_* arrays, when sources were asked for
    candidates: list[scoring.Candidate] = []
    twins: list[Twin] = []
    for row in rows:
        belief = belief_from_values(
            row[:BELIEF_FIELDS], () if i_src is None else _sources(row[i_src : i_src + 6])
        )
        dist, text_score, row_model = row[i_dist], row[i_tscore], row[i_model]
        candidates.append(
            scoring.Candidate(
                belief=belief,
                vector_rank=row[i_vrank],
                vector_similarity=None if dist is None else 1.0 - dist,
                text_rank=row[i_trank],
                # numeric in SQL: a Decimal here
                text_score=None if text_score is None else float(text_score),
                other_model=row_model != model,
            )
        )
        twins.append(Twin(belief.id, belief.status, row[i_norm], tuple(row[i_twins])))
    near = near_duplicates(twins)
    others = sum(c.other_model for c in candidates)
    return Fetched(candidates, near, others, probed)
