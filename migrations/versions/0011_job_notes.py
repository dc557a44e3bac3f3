"""What a job's extraction left out, and why.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-05

- ``memory_jobs.notes``: one line per thing the worker's screen or the extractor did not
  keep, and why ("op #0 (ADD) dropped: addressed to the assistant (override), not a fact
  about the user"; "small talk: not sent to the extractor"); NULL when nothing was left
  out. Written with the job's completion, in the same transaction.

Jobs done before keep NULL. Downgrading drops the column.
"""

from __future__ import annotations

from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("ALTER TABLE memory_jobs ADD COLUMN notes text")


def downgrade() -> None:
    op.execute("ALTER TABLE memory_jobs DROP COLUMN notes")
