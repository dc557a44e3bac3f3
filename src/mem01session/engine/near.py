"""Near-duplicates among a recall's candidates: pairs that say the same thing.

Two candidates of the same status are near-duplicates when their normalized statements
are equal, or when one embedding model made both vectors and their cosine similarity is at
least :data:`DUPLICATE_COSINE`. The recall statement returns each candidate's vector as
raw big-endian float32s; comparing a few dozen of them here is one small product (computed
without the BLAS thread pool), where the same pairs as a self-join in SQL cost more than the
rest of the statement.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

# Two beliefs whose embeddings are at least this similar say the same thing.
DUPLICATE_COSINE = 0.95


class Twin(NamedTuple):
    """What decides whether a candidate duplicates another."""

    id: int
    status: str
    model: str | None
    norm_content: str
    # Big-endian float32s: pgvector's binary form (``vector_send``) without its 4-byte
    # header; None without a vector.
    vector: bytes | None


def near_duplicates(twins: Sequence[Twin]) -> dict[int, list[int]]:
    """For each candidate that has near-duplicates, their ids (symmetric: each pair is
    listed under both of its ids)."""
    near: defaultdict[int, list[int]] = defaultdict(list)

    def pair(a: int, b: int) -> None:
        if b not in near[a]:
            near[a].append(b)
            near[b].append(a)

    same_text: defaultdict[tuple[str, str], list[int]] = defaultdict(list)
    same_space: defaultdict[tuple[str, str, int], list[tuple[int, bytes]]] = defaultdict(list)
    for t in twins:
        same_text[(t.status, t.norm_content)].append(t.id)
        if t.vector is not None and t.model is not None:
            same_space[(t.status, t.model, len(t.vector))].append((t.id, t.vector))
    for same in same_text.values():
        for i, a in enumerate(same):
            for b in same[i + 1 :]:
                pair(a, b)
    for group in same_space.values():
        if len(group) < 2:
            continue
        ids = [bid for bid, _ in group]
        raw = b"".join(vector for _, vector in group)
        m = np.frombuffer(raw, dtype=">f4").reshape(len(group), -1).astype(np.float32)
        norms = np.sqrt(np.einsum("ij,ij->i", m, m))
        norms[norms == 0] = 1.0  # a zero vector is similar to nothing
        unit = m / norms[:, None]
        # einsum, not ``unit @ unit.T``: a matrix product goes to the BLAS thread pool,
        # whose spinning threads cost tens of milliseconds on a busy machine (invariant 15).
        rows, cols = np.nonzero(np.einsum("ik,jk->ij", unit, unit) >= DUPLICATE_COSINE)
        for i, j in zip(rows.tolist(), cols.tolist(), strict=True):
            if i < j:
                pair(ids[i], ids[j])
    return dict(near)
