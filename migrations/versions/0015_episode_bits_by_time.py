"""The bits index keyed by the time said too.

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-06

``episodes_user_bits_idx`` held each user's vector bits by user and model, the time said
among its included columns. A question naming days ("in March", "since last year") of a
user with a lifetime of episodes reads those days' bits: keyed by the time said as well,
the index gives them as one range, where it gave every bit of the user's to be filtered
(``mem01session.engine.episode_candidates``). Reading all of a user's bits is unchanged.

The index is made again (as long as reading the table's bits takes; writes to episodes
wait meanwhile). Downgrading makes it again as before; nothing is lost either way.
"""

from __future__ import annotations

from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("DROP INDEX IF EXISTS episodes_user_bits_idx")
    op.execute(
        "CREATE INDEX episodes_user_bits_idx ON episodes (user_id, embedding_model, said_at) "
        "INCLUDE (id, embedding_bits) WHERE hidden_at IS NULL"
    )


def downgrade() -> None:
    op.execute("DROP INDEX IF EXISTS episodes_user_bits_idx")
    op.execute(
        "CREATE INDEX episodes_user_bits_idx ON episodes (user_id, embedding_model) "
        "INCLUDE (id, said_at, embedding_bits) WHERE hidden_at IS NULL"
    )
