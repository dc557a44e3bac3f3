"""Imports in the ledger.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-06

- ``belief_events.op`` may be ``IMPORT``: one row per user a document was imported into
  (``mem01session import``), with what it brought and the document's digest (what makes a
  second import of the same document change nothing). Its ``belief_id`` is NULL.

Downgrading deletes those rows (the imported beliefs, episodes and their own ledger rows
stay) and restores the former list of ops.
"""

from __future__ import annotations

from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None

_BEFORE = "'ADD', 'CONFIRM', 'UPDATE', 'SUPERSEDE', 'INVALIDATE', 'MERGE', 'CORRECT', 'FORGET'"


def _ops(listed: str) -> None:
    op.execute("ALTER TABLE belief_events DROP CONSTRAINT belief_events_op_valid")
    op.execute(
        f"ALTER TABLE belief_events ADD CONSTRAINT belief_events_op_valid CHECK (op IN ({listed}))"
    )


def upgrade() -> None:
    _ops(f"{_BEFORE}, 'IMPORT'")


def downgrade() -> None:
    op.execute("DELETE FROM belief_events WHERE op = 'IMPORT'")
    _ops(_BEFORE)
