"""Near-duplicate beliefs: linked when written, read back by recall.

Two beliefs of the same status are near-duplicates when their normalized statements are
equal, or when one embedding model made both vectors and their cosine similarity is at
least :data:`DUPLICATE_COSINE`. The second kind is found when a belief's vector is
written (:func:`link`: a new belief, a revised statement, a re-embedded vector) and kept
as links in ``belief_twins``, one row per direction, whatever the two beliefs' statuses.
Recall then reads each candidate's links with the candidate itself and needs no vector
back: :func:`near_duplicates` is a few set lookups, with no numerical work on the per-run
path (a matrix product there went to the BLAS thread pool, whose spinning threads cost
tens of milliseconds on a busy machine: invariant 15).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import NamedTuple

from .tx import Tx

# Two beliefs whose embeddings are at least this similar say the same thing.
DUPLICATE_COSINE = 0.95
MAX_DISTANCE = 1.0 - DUPLICATE_COSINE  # pgvector's cosine distance (``<=>``)

# The user's beliefs whose vectors (of the same model) are within MAX_DISTANCE of those
# of ``ids``, linked both ways. A zero vector's distance is NaN, which is near nothing.
LINK = """
INSERT INTO belief_twins (user_id, belief_id, twin_id)
SELECT :u, p.a, p.b
FROM beliefs n
JOIN beliefs o ON o.user_id = :u AND o.id <> n.id AND o.embedding_model = n.embedding_model
CROSS JOIN LATERAL (VALUES (n.id, o.id), (o.id, n.id)) AS p(a, b)
WHERE n.user_id = :u AND n.id = ANY(CAST(:ids AS bigint[]))
  AND (o.embedding <=> n.embedding) <= :max_distance
ON CONFLICT DO NOTHING"""
# The links of ``ids``, both ways (before their vectors are linked anew).
UNLINK = """
DELETE FROM belief_twins WHERE user_id = :u
  AND (belief_id = ANY(CAST(:ids AS bigint[])) OR twin_id = ANY(CAST(:ids AS bigint[])))"""

# LINK and UNLINK for several users' beliefs at once: ``(:users[i], :ids[i])`` pairs.
LINK_MANY = """
INSERT INTO belief_twins (user_id, belief_id, twin_id)
SELECT n.user_id, p.a, p.b
FROM unnest(CAST(:users AS text[]), CAST(:ids AS bigint[])) AS w(u, id)
JOIN beliefs n ON n.user_id = w.u AND n.id = w.id
JOIN beliefs o ON o.user_id = n.user_id AND o.id <> n.id AND o.embedding_model = n.embedding_model
CROSS JOIN LATERAL (VALUES (n.id, o.id), (o.id, n.id)) AS p(a, b)
WHERE (o.embedding <=> n.embedding) <= :max_distance
ON CONFLICT DO NOTHING"""
UNLINK_MANY = """
DELETE FROM belief_twins t USING unnest(CAST(:users AS text[]), CAST(:ids AS bigint[])) AS w(u, id)
WHERE t.user_id = w.u AND (t.belief_id = w.id OR t.twin_id = w.id)"""


async def link(tx: Tx, user_id: str, ids: Sequence[int], *, anew: Sequence[int] = ()) -> None:
    """Link the beliefs ``ids`` of ``user_id`` to their near-duplicates, inside the
    transaction that wrote their vectors; ``anew``: those among them whose earlier vector
    was linked already (a revised statement, a re-embedding): their old links go first."""
    if anew:
        await tx.run(UNLINK, {"u": user_id, "ids": list(anew)})
    if ids:
        await tx.run(LINK, {"u": user_id, "ids": list(ids), "max_distance": MAX_DISTANCE})


async def link_many(
    tx: Tx, ids: Sequence[tuple[str, int]], *, anew: Sequence[tuple[str, int]] = ()
) -> None:
    """:func:`link` for several users' beliefs, given as ``(user_id, belief_id)``."""
    if anew:
        users, pairs = zip(*anew, strict=True)
        await tx.run(UNLINK_MANY, {"users": list(users), "ids": list(pairs)})
    if ids:
        users, pairs = zip(*ids, strict=True)
        await tx.run(
            LINK_MANY, {"users": list(users), "ids": list(pairs), "max_distance": MAX_DISTANCE}
        )


class Twin(NamedTuple):
    """What decides whether a recall candidate duplicates another."""

    id: int
    status: str
    norm_content: str
    linked: tuple[int, ...]  # its near-duplicates by vector (``belief_twins``)


def near_duplicates(twins: Sequence[Twin]) -> dict[int, list[int]]:
    """For each candidate that has near-duplicates among ``twins``, their ids (symmetric:
    each pair is listed under both of its ids)."""
    near: defaultdict[int, list[int]] = defaultdict(list)

    def pair(a: int, b: int) -> None:
        if b not in near[a]:
            near[a].append(b)
            near[b].append(a)

    status = {t.id: t.status for t in twins}
    same_text: defaultdict[tuple[str, str], list[int]] = defaultdict(list)
    for t in twins:
        same_text[(t.status, t.norm_content)].append(t.id)
        for other in t.linked:
            if status.get(other) == t.status:
                pair(t.id, other)
    for same in same_text.values():
        for i, a in enumerate(same):
            for b in same[i + 1 :]:
                pair(a, b)
    return dict(near)
