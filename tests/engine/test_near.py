"""Near-duplicate pairs among candidates: pure functions, no database."""

from __future__ import annotations

import math

import numpy as np

from mem01session.engine.near import DUPLICATE_COSINE, Twin, near_duplicates


def raw(*values: float) -> bytes:
    """A vector as the recall statement returns it: big-endian float32s."""
    return np.asarray(values, dtype=">f4").tobytes()


def at_cosine(c: float, side: float = 1.0) -> bytes:
    """A 2-d vector whose cosine with (1, 0) is ``c``, above the axis (or below: -1)."""
    return raw(c, side * math.sqrt(1.0 - c * c))


def twin(bid: int, vector: bytes | None, *, text: str = "", status: str = "active") -> Twin:
    return Twin(bid, status, "m", text or f"text {bid}", vector)


def test_vectors_at_the_threshold_pair_and_below_it_do_not() -> None:
    near = near_duplicates(
        [
            twin(1, raw(1.0, 0.0)),
            twin(2, at_cosine(DUPLICATE_COSINE + 0.001)),
            twin(3, at_cosine(DUPLICATE_COSINE - 0.01, side=-1.0)),
        ]
    )
    assert near[1] == [2] and near[2] == [1]
    assert 3 not in near


def test_length_does_not_matter_only_direction() -> None:
    near = near_duplicates([twin(1, raw(1.0, 0.0)), twin(2, raw(40.0, 0.5))])
    assert near == {1: [2], 2: [1]}


def test_equal_normalized_text_pairs_without_vectors() -> None:
    near = near_duplicates(
        [twin(1, None, text="lives in lyon"), twin(2, None, text="lives in lyon"), twin(3, None)]
    )
    assert near == {1: [2], 2: [1]}


def test_a_pair_found_twice_is_listed_once() -> None:
    same = raw(0.0, 1.0)
    near = near_duplicates([twin(1, same, text="x"), twin(2, same, text="x")])
    assert near == {1: [2], 2: [1]}


def test_different_statuses_never_pair() -> None:
    same = raw(0.0, 1.0)
    near = near_duplicates([twin(1, same, text="x"), twin(2, same, text="x", status="superseded")])
    assert near == {}


def test_vectors_of_different_models_are_not_compared() -> None:
    same = raw(0.0, 1.0)
    near = near_duplicates([Twin(1, "active", "a", "x", same), Twin(2, "active", "b", "y", same)])
    assert near == {}


def test_a_zero_vector_is_similar_to_nothing() -> None:
    near = near_duplicates([twin(1, raw(0.0, 0.0)), twin(2, raw(0.0, 0.0)), twin(3, raw(1, 0))])
    assert near == {}


def test_the_bound_from_the_heads_loses_no_pair() -> None:
    """The two-step search finds exactly the pairs the full product finds, on sentence-like
    vectors (a shared component, as a sentence model's have) with planted near-duplicates
    just above and just below the threshold."""
    rng = np.random.default_rng(7)
    base = rng.standard_normal((100, 384)) + 2.0 * rng.standard_normal(384)
    base /= np.linalg.norm(base, axis=1, keepdims=True)
    rows = [*base]
    for k, cosine in enumerate((0.951, 0.9501, 0.949, 0.99, 0.9)):
        noise = rng.standard_normal(384)
        noise -= noise.dot(base[k]) * base[k]
        noise /= np.linalg.norm(noise)
        rows.append(cosine * base[k] + math.sqrt(1 - cosine * cosine) * noise)
    vectors = np.asarray(rows, dtype=np.float32)
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    full = np.einsum("ik,jk->ij", unit, unit) >= DUPLICATE_COSINE
    expected = {(i, j) for i, j in zip(*np.nonzero(full), strict=True) if i < j}
    assert {(0, 100), (1, 101), (3, 103)} <= expected and (2, 102) not in expected
    twins = [twin(i, v.astype(">f4").tobytes()) for i, v in enumerate(vectors)]
    near = near_duplicates(twins)
    assert {(a, b) for a, bs in near.items() for b in bs if a < b} == expected
