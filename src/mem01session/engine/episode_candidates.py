"""The read path's statement over episodes: what the user said that best answers a query.

Like :mod:`.candidates` for beliefs, in one statement: the top vector candidates (among
vectors of the embedder's model: the exact cosine distance over all the user's recallable
episodes, or, for a user with a lifetime of them (see :func:`_walk`), the nearest the
model's HNSW index finds, :mod:`mem01session.db.vector_index`, or the nearest by the sign
bits of their vectors, read from an index by user alone; either re-ranked by exact
distance) and the top full-text matches, each word weighed by its rarity among the user's
recallable episodes (``episode_terms``, kept by the write path; a word held by at least
half of them tells nothing and is left out; for a user with a lifetime of them, the
rarest are matched first, up to :data:`MAX_TEXT_MATCHES` episodes) and found in the
user's own words or, for less (:data:`CONTEXT_WEIGHT`), only in the message they
answered, with, for each candidate, the beliefs drawn from it (so that a quote whose
belief is in the block is not repeated). When the query names days ("in June",
"yesterday": :mod:`.named_days`), the episodes said in them are a third list, by
similarity (for a user with a lifetime of them, found by the bits of those days:
:func:`_days`). Hidden episodes
(a belief drawn from them was forgotten) and those past the retention never come back.
It runs on the direct pool, beside the belief statement.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from functools import cache
from typing import Any

from ..days.named import Span
from ..db.vector_index import VectorIndex
from ..db.vectors import BinaryVector
from .candidates import COMMON_MIN, COMMON_SHARE, MAX_QUERY_TERMS
from .engine_parts import EngineParts
from .records import Episode
from .scoring import EpisodeCandidate

_FIELDS = (
    "id, user_id, session_id, job_id, message, passage, role, content, said_at, item_ref, "
    "hidden_at, context"
)
_COLUMNS = ", ".join(f"e.{name}" for name in _FIELDS.split(", "))
CONTEXT_WEIGHT = 0.75
"""What a query word found only in an episode's context (the message it answered) counts
for, against one in the user's own words: less, so that of two passages matching alike
the one in which the user said it comes first (the assistant's words are often what it
suggested, not what the user said)."""


EXACT_UP_TO = 5000
"""A user's episodes up to which recall reads every vector and scores every full-text
match (exact, and cheap enough); past it, see :func:`_walk`."""

MIN_SHARE = 0.1
"""The least share of the table's episodes a user must hold for the HNSW index to be
walked: the walk, filtered by user, visits some ``pool / share`` entries before it has the
user's nearest, and below this share that costs more than reading the user's bits."""

BITS_FACTOR = 4
"""Read by their bits (a user past :data:`EXACT_UP_TO` below :data:`MIN_SHARE`, and the
days a query names for any user past it), this many times the pool are re-ranked by exact
distance: the sign bits of a sentence vector order
its neighbours roughly, and the exact nearest are nearly all among the first couple of
hundred (``python -m bench episodes`` reports the share found). 0: read every vector
instead."""

EXACT = "exact"
BITS = "bits"
Walk = str | VectorIndex
"""How the vector candidates are found: :data:`EXACT`, :data:`BITS` or through an index."""

MAX_TEXT_MATCHES = 500
"""Past :data:`EXACT_UP_TO`, the most episodes the full-text list scores: the query's
words are taken rarest first while the episodes holding them add up to at most this many
(a user with a lifetime of messages holds a fairly common word in thousands; the vector
list finds those)."""

_UNBOUNDED = 2**31 - 1
COUNT_SQL = "SELECT episodes FROM memory_users WHERE user_id = %(user_id)s"
# Read apart: on Citus ``memory_users`` is distributed and the catalog is the coordinator's.
TABLE_SQL = "SELECT reltuples FROM pg_class WHERE oid = 'episodes'::regclass"


async def _walk(parts: EngineParts, user_id: str, dim: int) -> tuple[bool, Walk]:
    """Whether the user holds more than :data:`EXACT_UP_TO` episodes, and how their
    nearest are found: every vector read while they are few; past that the model's HNSW
    index where the user holds at least :data:`MIN_SHARE` of the table (on a cluster
    distributed by user, whose coordinator does not count the shards' rows, always), else
    their bits. The count is the one the user's last recall in this process returned
    (``parts.episode_counts``); read by a statement of its own only for a user not recalled
    lately. The table's size is the planner's estimate, read at most once a minute
    (``parts.episodes_table``)."""
    direct = parts.db.direct
    episodes = parts.episode_counts.get(user_id)
    if episodes is None:
        counted = await direct.fetch(COUNT_SQL, {"user_id": user_id})
        episodes = int(counted[0]["episodes"]) if counted else 0
        parts.episode_counts.set(user_id, episodes)
    if episodes <= EXACT_UP_TO:
        return False, EXACT
    rough = _rough()
    index = await parts.db.vector_index(parts.embedder.name, dim)
    if index is None:
        return True, rough
    if direct.distributed:
        return True, index
    table = parts.episodes_table.get()
    if table is None:
        rows = await direct.fetch(TABLE_SQL, {})
        table = float(rows[0]["reltuples"]) if rows else 0.0
        parts.episodes_table.set(table)
    share = episodes / table if table > 0 else 1.0
    return True, index if share >= MIN_SHARE else rough


def _recallable(window: str, user: str = "e.user_id") -> str:
    """The condition on ``e`` of the user's recallable episodes in the time ``window``
    (``user``: how the user column is matched)."""
    return f"{user} = %(user_id)s AND e.hidden_at IS NULL{window}"


def _nearest(walk: Walk, window: str, routed: bool, extra: str = "") -> str:
    """The rows (id, exact distance) of the user's nearest episodes in the time ``window``,
    the pool of them, found as ``walk`` says; ``extra``: a further condition on ``e`` (the
    days a query names)."""
    where = _recallable(window)
    if walk == EXACT:
        return f"""
    SELECT e.id, e.embedding <=> q.v AS dist FROM episodes e, q
    WHERE {where}{extra} AND e.embedding_model = %(model)s
    ORDER BY dist, e.id DESC LIMIT %(pool)s"""
    if walk == BITS:
        # The inner list is read from episodes_user_bits_idx alone (it holds every column
        # the list needs); only the rough nearest are fetched from the table. The query's
        # bits are made once (q.b), not once per episode.
        return f"""
    SELECT x.id, x.embedding <=> q.v AS dist FROM (
      SELECT e.id FROM episodes e, q
      WHERE {where}{extra} AND e.embedding_model = %(model)s
      ORDER BY e.embedding_bits <~> q.b, e.id DESC LIMIT %(rough)s
    ) r JOIN episodes x ON x.user_id = %(user_id)s AND x.id = r.id, q
    ORDER BY dist, x.id DESC LIMIT %(pool)s"""
    index = walk
    assert isinstance(index, VectorIndex)
    # Ordered by the indexed expression against a parameter (what the index can take);
    # the outer ranking is by the exact distance.
    order = index.distance("e.embedding", "%(qvec)s")
    # Planned once for every user (generic plans), the statement would read the user's
    # rows by the primary key and sort them: the user is matched in a form no B-tree
    # serves, so that the walk of the index is the plan (on Citus, which plans each
    # statement for its user and routes it by this equality, it stays as it is).
    user = "e.user_id" if routed else "(e.user_id || '')"
    return f"""
    SELECT e.id, e.embedding <=> q.v AS dist FROM episodes e, q
    WHERE {_recallable(window, user)}{extra} AND e.embedding_model = {index.model_literal}
    ORDER BY {order} LIMIT %(pool)s"""


def _rough() -> Walk:
    """How a lifetime's vectors are read without the HNSW index: by their bits, or (with
    :data:`BITS_FACTOR` 0) every one of them."""
    return BITS if BITS_FACTOR > 0 else EXACT


def _days(walk: Walk, window: str, routed: bool) -> str:
    """The CTE of the days list: the user's nearest episodes said in the days a query
    names, found as ``walk`` says: exactly where the user's vectors are read so; for a
    user with a lifetime of them, by the bits of those days' vectors, read from
    ``episodes_user_bits_idx`` as one range of the time said ("since last year" holds
    thousands of a lifetime's messages: reading each of their vectors took hundreds of
    milliseconds), the nearest re-ranked exactly."""
    span = " AND e.said_at >= %(days_from)s AND e.said_at < %(days_until)s"
    nearest = _nearest(walk, window, routed, span)
    return f"""
day AS MATERIALIZED (
  SELECT s.id, s.dist, row_number() OVER (ORDER BY s.dist, s.id DESC) AS day_rank
  FROM ({nearest}) s
),"""


@cache
def _statement(
    window: str, text: bool, days: Walk | None, walk: Walk = EXACT, routed: bool = False
) -> str:
    """The statement for a time window (retention, ``as_of``) and kind of query; ``days``:
    how the episodes of the days the query names (:mod:`.named_days`) are found, a third
    list (None: it names none); ``walk``: how the vector candidates are found
    (:func:`_walk`); ``routed``: on a cluster distributed by user."""
    where = _recallable(window)
    nearest = _nearest(walk, window, routed)
    vec = f"""
vec AS MATERIALIZED (
  SELECT s.id, s.dist, row_number() OVER (ORDER BY s.dist, s.id DESC) AS vector_rank
  FROM ({nearest}) s
)"""
    if text:
        txt = f"""
w AS MATERIALIZED (
  SELECT r.lexeme, r.q, r.own, r.idf FROM (
    SELECT l.lexeme, quote_literal(l.lexeme)::tsquery AS q,
           (quote_literal(l.lexeme) || ':A')::tsquery AS own,
           ln((n.n + 1.0) / (coalesce(t.episodes, 0) + 0.5)) AS idf,
           sum(coalesce(t.episodes, 0)) OVER (ORDER BY coalesce(t.episodes, 0), l.lexeme) AS upto
    FROM (SELECT DISTINCT unnest(tsvector_to_array(to_tsvector('english', %(query)s))) AS lexeme) l
    CROSS JOIN (SELECT greatest(1, coalesce(max(u.episodes), 0)) AS n
                FROM memory_users u WHERE u.user_id = %(user_id)s) n
    LEFT JOIN LATERAL (
      SELECT t.episodes FROM episode_terms t
      WHERE t.user_id = %(user_id)s AND t.lexeme = l.lexeme
    ) t ON true
    WHERE coalesce(t.episodes, 0) < greatest(%(common_share)s * n.n, %(common_min)s)
  ) r
  WHERE r.upto <= %(max_matches)s  -- see MAX_TEXT_MATCHES (else unbounded)
  ORDER BY r.upto = 0, r.idf DESC, r.lexeme  -- see MAX_QUERY_TERMS
  LIMIT %(max_terms)s
),
tq AS MATERIALIZED (
  SELECT string_agg(quote_literal(lexeme), ' | ')::tsquery AS t, sum(idf) AS total FROM w
),
txt AS MATERIALIZED (
  SELECT id, score, row_number() OVER (ORDER BY score DESC, id DESC) AS rnk FROM (
    SELECT e.id,
           (SELECT sum(CASE WHEN e.tsv @@ w.own THEN w.idf ELSE w.idf * %(context_weight)s END)
            FROM w WHERE e.tsv @@ w.q) / tq.total AS score
    FROM episodes e, tq
    WHERE {where} AND e.tsv @@ tq.t
    ORDER BY 2 DESC, 1 DESC LIMIT %(pool)s) s
)"""
    else:
        txt = """
txt AS (SELECT NULL::bigint AS id, NULL::numeric AS score, NULL::bigint AS rnk WHERE false)"""
    if days is not None:
        cand = f"""{_days(days, window, routed).strip()}
cand AS (
  SELECT i.id, coalesce(v.dist, d.dist) AS dist, v.vector_rank, t.rnk AS text_rank,
         t.score AS text_score, d.day_rank
  FROM (SELECT id FROM vec UNION SELECT id FROM txt UNION SELECT id FROM day) i
  LEFT JOIN vec v ON v.id = i.id LEFT JOIN txt t ON t.id = i.id LEFT JOIN day d ON d.id = i.id
)"""
    else:
        cand = """
cand AS (
  SELECT v.id, v.dist, v.vector_rank, t.rnk AS text_rank, t.score AS text_score,
         NULL::bigint AS day_rank
  FROM vec v LEFT JOIN txt t ON t.id = v.id
  UNION ALL
  SELECT t.id, NULL::float8, NULL::bigint, t.rnk, t.score, NULL::bigint FROM txt t
  WHERE t.id NOT IN (SELECT id FROM vec)
)"""
    return f"""
WITH q AS MATERIALIZED (
  SELECT v, binary_quantize(v)::bit varying AS b FROM (SELECT CAST(%(qvec)s AS vector) AS v) q
),
{vec.strip()},
{txt.strip()},
{cand.strip()}
SELECT {_COLUMNS}, c.dist, c.vector_rank, c.text_rank, c.text_score, c.day_rank,
       ARRAY(SELECT s.belief_id FROM belief_sources s
             WHERE s.user_id = %(user_id)s AND s.episode_id = e.id) AS belief_ids,
       (SELECT u.episodes FROM memory_users u WHERE u.user_id = %(user_id)s) AS held
FROM cand c CROSS JOIN LATERAL (
  -- Each candidate's row by its key: LIMIT keeps the planner from making this a join it
  -- may drive from all of the user's episodes, re-reading the candidates for each, as a
  -- plan made while the table was new and empty did (the direct pool keeps its plans).
  SELECT {_FIELDS} FROM episodes x
  WHERE x.user_id = %(user_id)s AND x.id = c.id LIMIT 1
) e"""


async def fetch_episodes(
    parts: EngineParts,
    user_id: str,
    query: str,
    vector: Sequence[float],
    now: datetime,
    *,
    pool: int,
    as_of: datetime | None = None,
    text: bool = True,
    days: Span | None = None,
) -> list[EpisodeCandidate]:
    """The episodes that best answer ``query`` (cleaned, not empty; ``vector`` its
    embedding), with their signals; ``text``: whether the query has words to match;
    ``days``: the days it names, whose episodes are also fetched (by similarity)."""
    params: dict[str, Any] = {
        "user_id": user_id,
        "pool": pool,
        "model": parts.embedder.name,
        "qvec": BinaryVector(vector),
    }
    window = ""
    oldest = parts.episodes.oldest(now)
    if oldest is not None:
        window += " AND e.said_at >= %(oldest)s"
        params["oldest"] = oldest
    if as_of is not None:
        window += " AND e.said_at <= %(as_of)s"
        params["as_of"] = as_of
    if text:
        params.update(
            query=query,
            max_terms=MAX_QUERY_TERMS,
            common_share=COMMON_SHARE,
            common_min=COMMON_MIN,
            context_weight=CONTEXT_WEIGHT,
        )
    if days is not None:
        params.update(days_from=days.start, days_until=days.end)
    many, walk = await _walk(parts, user_id, len(vector))
    params["max_matches"] = MAX_TEXT_MATCHES if many else _UNBOUNDED
    params["rough"] = pool * BITS_FACTOR
    routed = bool(parts.db.direct.distributed)
    # The days' episodes of a lifetime are read by their bits, whichever way the rest are.
    day_walk = None if days is None else EXACT if walk == EXACT else _rough()
    statement = _statement(window, text, day_walk, walk, routed)
    _, rows = await parts.db.direct.fetch_tuples(statement, params, binary=True)
    out: list[EpisodeCandidate] = []
    if rows and rows[0][-1] is not None:
        parts.episode_counts.set(user_id, int(rows[0][-1]))
    elif walk != EXACT:  # nothing found where a lifetime was counted: count again next time
        parts.episode_counts.forget(user_id)
    for row in rows:
        (eid, user, session, job, message, passage, role, content, said_at, item_ref,
         hidden_at, context, dist, vrank, trank, tscore, drank, belief_ids, _) = row  # fmt: skip
        episode = Episode(
            eid, user, session, job, message, passage, role, content, said_at, item_ref,
            hidden_at, tuple(belief_ids or ()), context,
        )  # fmt: skip
        out.append(
            EpisodeCandidate(
                episode,
                vrank,
                None if dist is None else 1.0 - dist,
                trank,
                None if tscore is None else float(tscore),
                drank,
            )
        )
    return out
