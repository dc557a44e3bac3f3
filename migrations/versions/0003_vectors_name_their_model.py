"""Each stored vector names the embedding model that made it.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-30

Until now a database held vectors of one model, recorded once in ``memory_meta``, and
opening it with another embedder was refused. From here every belief's vector carries its
model (``beliefs.embedding_model``) and the column takes vectors of any dimension: recall
compares only vectors of the model in use (others are found by full text alone), and
``mem01session reembed`` converts them. Existing vectors are tagged with the model
``memory_meta`` recorded (``unknown`` if none was).

Downgrading puts the fixed dimension back; vectors of another dimension are dropped (their
beliefs keep their text and are found by full text).
"""

from __future__ import annotations

from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("ALTER TABLE beliefs ADD COLUMN embedding_model text")
    op.execute(
        "UPDATE beliefs SET embedding_model = coalesce("
        "(SELECT embedding_model FROM memory_meta WHERE id = 1), 'unknown') "
        "WHERE embedding IS NOT NULL"
    )
    op.execute("ALTER TABLE beliefs ALTER COLUMN embedding TYPE vector")
    op.execute(
        "ALTER TABLE beliefs ADD CONSTRAINT beliefs_embedding_model_named "
        "CHECK ((embedding IS NULL) = (embedding_model IS NULL))"
    )


def downgrade() -> None:
    op.execute("ALTER TABLE beliefs DROP CONSTRAINT IF EXISTS beliefs_embedding_model_named")
    op.execute(
        "UPDATE beliefs SET embedding = NULL WHERE embedding IS NOT NULL AND "
        "vector_dims(embedding) <> (SELECT embedding_dim FROM memory_meta WHERE id = 1)"
    )
    dim = op.get_bind().exec_driver_sql("SELECT embedding_dim FROM memory_meta WHERE id = 1")
    op.execute(f"ALTER TABLE beliefs ALTER COLUMN embedding TYPE vector({int(dim.scalar_one())})")
    op.execute("ALTER TABLE beliefs DROP COLUMN embedding_model")
