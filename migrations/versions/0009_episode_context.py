"""Episode context: the words a user's message answered, searchable beside it.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-03

- ``episodes.context``: for the first passage of a user's message, the end of the
  assistant message it came after in its conversation (the question it answers:
  "Lisbon." after "Where do you live now?"), as the job table kept it (screened for
  secrets); NULL for other passages and where nothing came before.
- ``episodes.tsv`` is rebuilt to hold the message's own words at weight A and the
  context's at weight D: full-text recall finds a passage by the question it answered,
  and weighs such a match lower than the user's own words. The vector stays the user's
  words alone.

Existing episodes keep a NULL context (their words, now at weight A, match as before).
The rebuild rewrites the table once. Downgrading drops the context, rebuilds ``tsv`` from
the content alone and counts the users' episode words (``episode_terms``, which held the
contexts' words too) again.
"""

from __future__ import annotations

from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

WEIGHTED = (
    "setweight(to_tsvector('english'::regconfig, content), 'A') || "
    "setweight(to_tsvector('english'::regconfig, coalesce(context, '')), 'D')"
)
PLAIN = "to_tsvector('english'::regconfig, content)"


def _rebuild_tsv(expression: str) -> None:
    op.execute("DROP INDEX IF EXISTS episodes_user_tsv_idx")
    op.execute("ALTER TABLE episodes DROP COLUMN tsv")
    op.execute(
        f"ALTER TABLE episodes ADD COLUMN tsv tsvector GENERATED ALWAYS AS ({expression}) STORED"
    )
    op.execute("CREATE INDEX episodes_user_tsv_idx ON episodes USING gin (user_id, tsv)")


def upgrade() -> None:
    op.execute("ALTER TABLE episodes ADD COLUMN context text")
    _rebuild_tsv(WEIGHTED)


def downgrade() -> None:
    _rebuild_tsv(PLAIN)
    op.execute("ALTER TABLE episodes DROP COLUMN context")
    # The word counts held the contexts' words too: counted again from what is left.
    op.execute("DELETE FROM episode_terms")
    op.execute(
        "INSERT INTO episode_terms (user_id, lexeme, episodes) "
        "SELECT e.user_id, l.lexeme, count(*) FROM episodes e, "
        "unnest(tsvector_to_array(e.tsv)) AS l(lexeme) "
        "WHERE e.hidden_at IS NULL GROUP BY e.user_id, l.lexeme"
    )
