"""The approximate index over episode vectors: one HNSW index per embedding model.

``episodes.embedding`` takes vectors of any dimension (each names its model), and an HNSW
index needs one: each model gets a partial index over its own rows, on the column cast to
its dimension (``halfvec`` past pgvector's 2,000 dimensions for ``vector``, up to 4,000).
A statement reaches it by ordering on the same cast, with the model named as a literal
(a parameter cannot prove the index's predicate).

Recall reads a user's episodes exactly while they are few and through this index once
they are many (see :mod:`mem01session.engine.episode_candidates`): the index's cost per
query grows with the logarithm of the table, the exact scan's with the user's history.

The index is made by the migration that introduced it (for the models the episodes
already hold) and, for the model a database is opened with, at open
(:func:`ensure_vector_index`, ``CREATE INDEX CONCURRENTLY``: writes go on meanwhile).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

VECTOR_INDEX_PREFIX = "episodes_vectors_"
HNSW_MAX_VECTOR_DIM = 2000
HNSW_MAX_HALFVEC_DIM = 4000


@dataclass(frozen=True)
class VectorIndex:
    """The HNSW index over one embedding model's episode vectors."""

    model: str
    dim: int

    @property
    def name(self) -> str:
        digest = hashlib.sha1(f"{self.model}\0{self.dim}".encode()).hexdigest()[:12]
        return f"{VECTOR_INDEX_PREFIX}{digest}"

    @property
    def cast(self) -> str:
        kind = "vector" if self.dim <= HNSW_MAX_VECTOR_DIM else "halfvec"
        return f"{kind}({self.dim})"

    @property
    def model_literal(self) -> str:
        """The model's name as an SQL string literal (``standard_conforming_strings``)."""
        return "'" + self.model.replace("'", "''") + "'"

    def distance(self, column: str, query: str) -> str:
        """The cosine distance the index orders by, of ``column`` from ``query``."""
        return f"({column}::{self.cast}) <=> ({query}::{self.cast})"

    def create_sql(self, *, concurrently: bool) -> str:
        ops = "vector_cosine_ops" if self.dim <= HNSW_MAX_VECTOR_DIM else "halfvec_cosine_ops"
        how = "CONCURRENTLY " if concurrently else ""
        return (
            f"CREATE INDEX {how}IF NOT EXISTS {self.name} ON episodes USING hnsw "
            f"((embedding::{self.cast}) {ops}) WHERE embedding_model = {self.model_literal}"
        )


def vector_index(model: str, dim: int) -> VectorIndex | None:
    """The index a model's vectors get, or None when HNSW cannot take its dimension (or
    its name holds a NUL, which no literal can)."""
    if not 0 < dim <= HNSW_MAX_HALFVEC_DIM or "\0" in model:
        return None
    return VectorIndex(model, dim)


VALID_SQL = (
    "SELECT i.indisvalid AS valid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
    "WHERE c.relname = %(name)s"
)
"""Whether the index named ``name`` is there and usable (no row: not there)."""


def ensure_vector_index(conn: Any, model: str, dim: int) -> bool:
    """Make the index for ``model`` unless it is there (``conn``: a psycopg connection in
    autocommit mode, default row factory); whether it is usable after. A build that
    failed before (an invalid index left behind) is dropped and made again."""
    index = vector_index(model, dim)
    if index is None:
        return False
    row = conn.execute(VALID_SQL, {"name": index.name}).fetchone()
    if row is not None and row[0]:
        return True
    if row is not None:
        conn.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {index.name}")
    conn.execute(index.create_sql(concurrently=True))
    return True


__all__ = ["VALID_SQL", "VECTOR_INDEX_PREFIX", "VectorIndex", "ensure_vector_index", "vector_index"]
