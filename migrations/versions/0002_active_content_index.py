"""Index active beliefs by normalized content (confirmation lookups).

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30

Every ADD, SUPERSEDE and MERGE looks for an active belief with the same normalized
wording; without this index that is a scan of the user's active rows.
"""

from __future__ import annotations

from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        "CREATE INDEX beliefs_user_active_content_idx ON beliefs (user_id, norm_content) "
        "WHERE status = 'active'"
    )


def downgrade() -> None:
    op.execute("DROP INDEX IF EXISTS beliefs_user_active_content_idx")
