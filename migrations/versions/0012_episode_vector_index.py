"""An HNSW index over each embedding model's episode vectors.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-06

Recall over a user's episodes read every one of their vectors: its cost grew with the
user's whole history. Each embedding model whose vectors the episodes hold, and the one
the database was created for, gets a partial HNSW index over its rows, on the column cast
to the model's dimension (``mem01session.db.vector_index``); recall reads a user with many
episodes through it. A database opened later with another model gets that model's index
at open.

Building it reads every episode vector once (minutes for millions of episodes). On a
Citus coordinator the index is made on every shard. Downgrading drops the indexes.
"""

from __future__ import annotations

from alembic import op
from sqlalchemy import text

from mem01session.db.vector_index import vector_index

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def _models() -> set[tuple[str, int]]:
    bind = op.get_bind()
    found = {
        (str(model), int(dim))
        for model, dim in bind.execute(
            text(
                "SELECT DISTINCT embedding_model, vector_dims(embedding) FROM episodes "
                "WHERE embedding IS NOT NULL"
            )
        )
    }
    meta = bind.execute(text("SELECT embedding_model, embedding_dim FROM memory_meta")).first()
    if meta is not None and meta[0]:
        found.add((str(meta[0]), int(meta[1])))
    return found


def upgrade() -> None:
    op.execute("SET LOCAL maintenance_work_mem = '256MB'")
    for model, dim in sorted(_models()):
        index = vector_index(model, dim)
        if index is not None:
            # Driver SQL: a model's name may hold a colon, which text() would take for a
            # parameter.
            op.get_bind().exec_driver_sql(index.create_sql(concurrently=False))


def downgrade() -> None:
    bind = op.get_bind()
    names = bind.execute(
        text(
            "SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
            "WHERE i.indrelid = 'episodes'::regclass AND c.relname LIKE 'episodes\\_vectors\\_%'"
        )
    )
    for (name,) in list(names):
        op.execute(f'DROP INDEX IF EXISTS "{name}"')
