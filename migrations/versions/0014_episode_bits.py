"""Each episode's vector in one bit per dimension, in an index by user.

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-06

A user with more than a few thousand episodes who holds a small share of the table was
read exactly: every one of their vectors fetched from the table, scattered among every
other user's rows. ``episodes.embedding_bits`` is the vector's sign bits
(``binary_quantize``, kept by PostgreSQL from ``embedding``), and
``episodes_user_bits_idx`` holds them by user and model with the id and the time said:
recall reads a user's bits from that index alone, in one run of pages, takes the nearest
by Hamming distance, and re-ranks those by the exact distance
(``mem01session.engine.episode_candidates``).

Adding the column rewrites the episodes table (as long as a copy of it takes, under a lock
that holds writes to it). Downgrading drops the index and the column.
"""

from __future__ import annotations

from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        "ALTER TABLE episodes ADD COLUMN embedding_bits bit varying "
        "GENERATED ALWAYS AS (binary_quantize(embedding)) STORED"
    )
    op.execute(
        "CREATE INDEX episodes_user_bits_idx ON episodes (user_id, embedding_model) "
        "INCLUDE (id, said_at, embedding_bits) WHERE hidden_at IS NULL"
    )


def downgrade() -> None:
    op.execute("DROP INDEX IF EXISTS episodes_user_bits_idx")
    op.execute("ALTER TABLE episodes DROP COLUMN IF EXISTS embedding_bits")
