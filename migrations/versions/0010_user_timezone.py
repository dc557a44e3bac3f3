"""The user's time zone: the IANA zone their sessions last gave.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-04

- ``memory_users.timezone``: the zone of the latest turn written for the user whose
  session named one (``Mem01Session(timezone=...)``); NULL until then. Surfaces that have
  no session (the command line, the browser, the memory tools without a zone, the MCP
  server without ``--timezone``) date the user's memory in it, and read the days a
  question names ("yesterday") in it.

Existing users keep NULL (UTC) until their next turn from a session with a zone.
Downgrading drops the column.
"""

from __future__ import annotations

from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("ALTER TABLE memory_users ADD COLUMN timezone text")


def downgrade() -> None:
    op.execute("ALTER TABLE memory_users DROP COLUMN timezone")
