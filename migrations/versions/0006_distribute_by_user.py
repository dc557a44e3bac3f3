"""On a Citus coordinator, distribute the tables by user_id (nothing to do elsewhere).

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01

On plain PostgreSQL this revision changes nothing. On a Citus coordinator (the ``citus``
extension is installed in this database and ``citus_is_coordinator()``):

- ``beliefs``, ``belief_events``, ``belief_sources``, ``belief_terms``, ``memory_users``
  and ``memory_jobs`` are hash-distributed by ``user_id`` and co-located: every row of one
  user, in every table, lives in one shard group on one worker, so each statement the
  library makes for a user (recall, a batch of ops, the job claim, erase) runs on that
  worker alone.
- ``memory_meta`` (one row describing the whole database, no ``user_id``) becomes a
  reference table: a copy on every node, readable in any statement.
- the version table (``mem01session_version``; ``alembic_version`` before 0.2) stays a
  local table of the coordinator.

Existing rows move into the shards (their local copies are then truncated). The shard
count is Citus's ``citus.shard_count`` (32 unless set). Tables already distributed are
left as they are, so a database distributed by hand upgrades cleanly.

Downgrading turns every table back into a local table of the coordinator, rows included.
A database that got Citus after reaching this revision is distributed by hand (the
statements are in docs/scale-out.md; downgrading to 0005 would undo every later revision
too, and drop the episodes).
"""

from __future__ import annotations

from alembic import op
from sqlalchemy import text

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

ANCHOR = "beliefs"
COLOCATED = ("belief_events", "belief_sources", "belief_terms", "memory_users", "memory_jobs")
REFERENCE = ("memory_meta",)


def _on_coordinator() -> bool:
    bind = op.get_bind()
    if bind.execute(text("SELECT 1 FROM pg_extension WHERE extname = 'citus'")).first() is None:
        return False
    return bool(bind.execute(text("SELECT citus_is_coordinator()")).scalar())


def _distributed(table: str) -> bool:
    found = op.get_bind().execute(
        text("SELECT 1 FROM pg_dist_partition WHERE logicalrelid = CAST(:t AS regclass)"),
        {"t": table},
    )
    return found.first() is not None


def _distribute(table: str, call: str) -> None:
    if _distributed(table):
        return
    op.execute(f"SELECT {call}")
    # The rows were copied into the shards; the coordinator's local copy is dead weight.
    op.execute(f"SELECT truncate_local_data_after_distributing_table('{table}')")


def upgrade() -> None:
    if not _on_coordinator():
        return
    _distribute(ANCHOR, f"create_distributed_table('{ANCHOR}', 'user_id')")
    for table in COLOCATED:
        _distribute(
            table, f"create_distributed_table('{table}', 'user_id', colocate_with => '{ANCHOR}')"
        )
    for table in REFERENCE:
        _distribute(table, f"create_reference_table('{table}')")


def downgrade() -> None:
    if not _on_coordinator():
        return
    for table in (*REFERENCE, *reversed(COLOCATED), ANCHOR):
        if _distributed(table):
            op.execute(f"SELECT undistribute_table('{table}')")
