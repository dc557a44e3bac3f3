"""Near-duplicates among a recall's candidates: pairs that say the same thing.

Two candidates of the same status are near-duplicates when their normalized statements
are equal, or when one embedding model made both vectors and their cosine similarity is at
least :data:`DUPLICATE_COSINE`. The recall statement returns each candidate's vector as
raw big-endian float32s; comparing a hundred of them here is cheap, where the same pairs as
a self-join in SQL cost more than the rest of the statement.

The pairs are found in two exact steps, without the BLAS thread pool (a matrix product goes
there, and its spinning threads cost tens of milliseconds on a busy machine: invariant 15).
First the leading :data:`HEAD_SHARE` of the dimensions bound every pair's cosine from above:
the dot product of the two heads plus the product of the lengths of the two tails (Cauchy-
Schwarz). Only pairs whose bound reaches the threshold get their full dot product. Sentence
vectors that say different things share little, so nearly every pair stops at the first
step, which costs an eighth of the full product.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

# Two beliefs whose embeddings are at least this similar say the same thing.
DUPLICATE_COSINE = 0.95
# The share of the dimensions whose dot product, with the tails' lengths, bounds a pair's
# cosine before the full product is computed for the pairs that may reach the threshold.
HEAD_SHARE = 8
# Rounding in float32 sums may shift a bound by a few units in the last place: pairs within
# this much of the threshold go to the full product too.
_SLACK = 1e-4


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
        for i, j in _similar(m):
            pair(ids[i], ids[j])
    return dict(near)


def _similar(m: npt.NDArray[np.float32]) -> list[tuple[int, int]]:
    """Row pairs ``(i, j)``, ``i < j``, whose cosine is at least :data:`DUPLICATE_COSINE`
    (see the module docstring: a bound from the heads first, the full product after)."""
    norms = np.sqrt(np.einsum("ij,ij->i", m, m))
    norms[norms == 0] = 1.0  # a zero vector is similar to nothing
    unit = m / norms[:, None]
    head = max(1, unit.shape[1] // HEAD_SHARE)
    heads = np.ascontiguousarray(unit[:, :head])
    tails = unit[:, head:]
    tail = np.sqrt(np.einsum("ij,ij->i", tails, tails))
    # einsum, not ``@``: a matrix product goes to the BLAS thread pool.
    bound = np.einsum("ik,jk->ij", heads, heads) + tail[:, None] * tail[None, :]
    rows, cols = np.nonzero(bound >= DUPLICATE_COSINE - _SLACK)
    upper = rows < cols
    rows, cols = rows[upper], cols[upper]
    if not rows.size:
        return []
    full = np.einsum("ij,ij->i", unit[rows], unit[cols])
    hit = full >= DUPLICATE_COSINE
    return list(zip(rows[hit].tolist(), cols[hit].tolist(), strict=True))
