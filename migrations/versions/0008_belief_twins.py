"""Near-duplicate links: beliefs whose vectors say the same thing, found when written.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-01

- ``belief_twins``: one row per direction for each pair of a user's beliefs whose vectors
  (of one embedding model) have a cosine similarity of at least 0.95, whatever their
  statuses. The write path links a belief when it writes its vector; recall reads the
  links of its candidates instead of comparing their vectors.

The upgrade links the beliefs already stored (a self-join per user: its cost grows with
the square of a user's beliefs). On a Citus coordinator the table is distributed by
``user_id`` and co-located with ``beliefs`` (see revision 0006) before it is filled.

Downgrading drops the table; the links are derived data (the upgrade makes them again).
"""

from __future__ import annotations

from alembic import op
from sqlalchemy import text

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

# The library's threshold when this revision was written (engine/near.py).
MAX_DISTANCE = 1.0 - 0.95


def _on_coordinator() -> bool:
    bind = op.get_bind()
    if bind.execute(text("SELECT 1 FROM pg_extension WHERE extname = 'citus'")).first() is None:
        return False
    return bool(bind.execute(text("SELECT citus_is_coordinator()")).scalar())


def upgrade() -> None:
    op.execute(
        """
        CREATE TABLE belief_twins (
            user_id text NOT NULL,
            belief_id bigint NOT NULL,
            twin_id bigint NOT NULL,
            CONSTRAINT belief_twins_pkey PRIMARY KEY (user_id, belief_id, twin_id)
        )
        """
    )
    if _on_coordinator():
        op.execute(
            "SELECT create_distributed_table('belief_twins', 'user_id', colocate_with => 'beliefs')"
        )
    op.get_bind().execute(
        text(
            """
            INSERT INTO belief_twins (user_id, belief_id, twin_id)
            SELECT a.user_id, a.id, b.id
            FROM beliefs a
            JOIN beliefs b ON b.user_id = a.user_id AND b.id <> a.id
                          AND b.embedding_model = a.embedding_model
            WHERE (a.embedding <=> b.embedding) <= :max_distance
            """
        ),
        {"max_distance": MAX_DISTANCE},
    )


def downgrade() -> None:
    op.execute("DROP TABLE IF EXISTS belief_twins")
