"""Deterministic feature hashing: no model, no dependencies, words rather than meaning.

Good enough for tests and keyword-heavy facts; chosen only when asked for by name
(``MEM01_EMBEDDING_MODEL=mem01-offline-hash-v1-384``), never silently.
"""

from __future__ import annotations

import hashlib
import itertools
import math
import re
from collections.abc import Sequence

from ..errors import ConfigError
from .base import Vector

_WORD = re.compile(r"[a-z0-9]+(?:['.][a-z0-9]+)*")
_STOP = frozenset(
    """a an and are as at be but by do does did for from had has have he her his i i'm in is
    it its me my of on or our she so that the their them they this to was we were what when
    where which who will with you your""".split()
)


HASHING_PREFIX = "mem01-offline-hash-v1"
MAX_DIM = 16000  # the most dimensions pgvector indexes and stores in a vector column


class HashingEmbedder:
    """Deterministic signed feature hashing of words, word bigrams and character trigrams.

    Same text, same vector, on every machine and run.
    """

    def __init__(self, dim: int = 384) -> None:
        if isinstance(dim, bool) or not isinstance(dim, int) or not 8 <= dim <= MAX_DIM:
            raise ConfigError(
                f"HashingEmbedder dim must be an integer from 8 to {MAX_DIM}, got {dim!r:.40}"
            )
        self._dim = dim

    @property
    def name(self) -> str:
        return f"{HASHING_PREFIX}-{self._dim}"

    @classmethod
    def from_name(cls, name: str) -> HashingEmbedder:
        """The embedder a model name such as ``mem01-offline-hash-v1-384`` stands for."""
        _, _, dim = name.removeprefix(HASHING_PREFIX).partition("-")
        if not dim.isdigit():
            raise ConfigError(
                f"a hashing embedder's name ends with its dimension, e.g. {HASHING_PREFIX}-384; "
                f"got {name!r}"
            )
        return cls(int(dim))

    @property
    def dim(self) -> int:
        return self._dim

    def embed_one(self, text: str) -> Vector:
        vec = [0.0] * self._dim
        words = [w for w in _WORD.findall(text.lower()) if w not in _STOP]
        features: list[tuple[str, float]] = [(f"w:{w}", 1.0) for w in words]
        features += [(f"b:{a} {b}", 0.5) for a, b in itertools.pairwise(words)]
        for w in words:
            padded = f"#{w}#"
            features += [(f"c:{padded[i : i + 3]}", 0.25) for i in range(len(padded) - 2)]
        for feature, weight in features:
            digest = hashlib.blake2b(feature.encode(), digest_size=8).digest()
            bucket = int.from_bytes(digest[:4], "little") % self._dim
            sign = 1.0 if digest[4] & 1 else -1.0
            vec[bucket] += sign * weight
        norm = math.sqrt(sum(x * x for x in vec))
        if norm == 0.0:
            vec[0] = 1.0
            return vec
        return [x / norm for x in vec]

    async def embed(self, texts: Sequence[str]) -> list[Vector]:
        return [self.embed_one(t) for t in texts]
