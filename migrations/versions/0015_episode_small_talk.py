"""Which episodes are small talk, kept with them.

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-06

Over years, "thanks!", "ok" and greetings are a large share of what a user says. The write
path now marks them (``episodes.small_talk``, from ``mem01session.engine.small_talk``):
they are kept verbatim, but their words are not counted in ``episode_terms`` (the word
rarity recall weighs a query's words by) and they are left out of recall's vector and
full-text candidates (``mem01session.engine.episode_candidates``); a question that names
days ("what did I say yesterday?") still finds them among what was said then.
``episodes_user_bits_idx`` leaves them out too.

Episodes written before this revision are not marked (``false``): they stay candidates,
ranked down as before, and their words stay counted. Adding a column with a constant
default does not rewrite the table; the index is rebuilt. Downgrading drops the column and
rebuilds the index as 0014 made it.
"""

from __future__ import annotations

from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("ALTER TABLE episodes ADD COLUMN small_talk boolean NOT NULL DEFAULT false")
    op.execute("DROP INDEX IF EXISTS episodes_user_bits_idx")
    op.execute(
        "CREATE INDEX episodes_user_bits_idx ON episodes (user_id, embedding_model) "
        "INCLUDE (id, said_at, embedding_bits) WHERE hidden_at IS NULL AND NOT small_talk"
    )


def downgrade() -> None:
    op.execute("DROP INDEX IF EXISTS episodes_user_bits_idx")
    op.execute("ALTER TABLE episodes DROP COLUMN IF EXISTS small_talk")
    op.execute(
        "CREATE INDEX episodes_user_bits_idx ON episodes (user_id, embedding_model) "
        "INCLUDE (id, said_at, embedding_bits) WHERE hidden_at IS NULL"
    )
