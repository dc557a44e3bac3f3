"""Late ops: what a turn says about a belief the user stated again after that turn.

Turns reach the engine out of the order they were said: a failed job retried, a job held
back, two workers. The extractor sees the beliefs as they are when the job runs, so a
turn said before the current belief of a key would replace it ("I live in Lisbon", applied
after "I moved to Porto", superseded Porto). What the user said more recently wins: an op
of a dated turn (its provenance's ``observed_at``) that would replace, revise or retire a
belief last said after that turn (:func:`said_after`) leaves the belief as it is
(:meth:`~.batch.Batch.apply`). The statement the op makes, when it makes one, is kept as
that belief's history (:func:`insert_history`): superseded by it, valid from the turn (or
the time the op names) until the current belief's ``valid_from``, with its provenance.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from ..db.vectors import BinaryVector
from .records import normalize_content
from .row_mapping import BELIEF_COLUMNS
from .tx import Row, Tx

# When a belief was last said (see said_after), selected with a batch's targets (alias b).
LAST_SAID = (
    "GREATEST(b.valid_from, (SELECT max(s.observed_at) FROM belief_sources s "
    "WHERE s.user_id = b.user_id AND s.belief_id = b.id AND s.job_id IS NOT NULL)) "
    "AS last_said"
)

_INSERT_HISTORY = (
    "INSERT INTO beliefs (user_id, content, norm_content, key, status, confidence, "
    "valid_from, valid_to, superseded_by, created_at, updated_at, version, embedding, "
    "embedding_model) "
    "SELECT :u, :content, :norm, :key, 'superseded', :confidence, :valid_from, "
    "GREATEST(CAST(:valid_to AS timestamptz), CAST(:valid_from AS timestamptz)), :link, "
    ":now, :now, 1, CAST(:v AS vector), :model "
    "WHERE NOT EXISTS (SELECT 1 FROM beliefs WHERE user_id = :u "
    "AND status = 'active' AND norm_content = :norm) "
    f"RETURNING {BELIEF_COLUMNS}"
)


def said_after(belief: Mapping[Any, Any], observed_at: datetime) -> bool:
    """Whether ``belief`` (a row of the targets' look-up) was last said after a turn said at
    ``observed_at``: after its ``valid_from``, or after the last turn (a job) it was drawn
    from, confirmed or revised by. The turns count too: a belief said to hold since long
    ago ("since 2020") or restated since is still the user's latest word. (A direct write's
    source is dated when it was written, not when its fact began: its ``valid_from`` says.)"""
    last = belief.get("last_said") or belief["valid_from"]
    return bool(observed_at < last)


async def insert_history(
    tx: Tx,
    user_id: str,
    current: Mapping[Any, Any],
    content: str,
    *,
    key: str | None,
    confidence: float,
    valid_from: datetime,
    vector: BinaryVector,
    model: str,
    now: datetime,
) -> Row | None:
    """Insert ``content`` as a belief already superseded by ``current`` (valid from
    ``valid_from`` until ``current``'s, and never before it begins), keyed as ``current``
    unless ``key`` is given; None, inserting nothing, if an active belief states it."""
    return await tx.row(
        _INSERT_HISTORY,
        {
            "u": user_id,
            "content": content,
            "norm": normalize_content(content),
            "key": key or current["key"],
            "confidence": confidence,
            "valid_from": valid_from,
            "valid_to": current["valid_from"],
            "link": int(current["id"]),
            "now": now,
            "v": vector,
            "model": model,
        },
    )
