"""Per-user term counts: how many of a user's active beliefs hold each word.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-30

Recall weights a full-text match by how rare its words are among the user's own active
beliefs: a word in most of them (the user's own name, say) says little about which one a
question is after. ``belief_terms`` counts, per user and lexeme (as ``to_tsvector
('english', content)`` makes them), the active beliefs holding it, and
``memory_users.active_beliefs`` the user's active beliefs; the write path keeps both up to
date in the transaction that changes the beliefs. Filled here from the beliefs there are.
"""

from __future__ import annotations

from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        """
        CREATE TABLE belief_terms (
            user_id text NOT NULL,
            lexeme text NOT NULL,
            beliefs integer NOT NULL,
            CONSTRAINT belief_terms_pkey PRIMARY KEY (user_id, lexeme),
            CONSTRAINT belief_terms_beliefs_nonnegative CHECK (beliefs >= 0)
        )
        """
    )
    op.execute("ALTER TABLE memory_users ADD COLUMN active_beliefs integer NOT NULL DEFAULT 0")
    op.execute(
        "INSERT INTO belief_terms (user_id, lexeme, beliefs) "
        "SELECT b.user_id, t.lexeme, count(*) FROM beliefs b, "
        "unnest(tsvector_to_array(b.tsv)) AS t(lexeme) "
        "WHERE b.status = 'active' GROUP BY b.user_id, t.lexeme"
    )
    op.execute(
        "UPDATE memory_users u SET active_beliefs = c.n FROM ("
        "SELECT user_id, count(*) AS n FROM beliefs WHERE status = 'active' GROUP BY user_id) c "
        "WHERE u.user_id = c.user_id"
    )


def downgrade() -> None:
    op.execute("ALTER TABLE memory_users DROP COLUMN active_beliefs")
    op.execute("DROP TABLE belief_terms")
