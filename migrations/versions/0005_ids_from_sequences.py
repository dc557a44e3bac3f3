"""Row ids come from plain sequences instead of identity columns.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01

``beliefs``, ``belief_events``, ``belief_sources`` and ``memory_jobs`` numbered their rows
with ``GENERATED ALWAYS AS IDENTITY``. Each ``id`` now defaults to ``nextval`` of its own
bigint sequence owned by the column (what ``bigserial`` makes), continuing where the
identity stopped. Nothing changes for the library, which never writes an id. The reason is
Citus (revision 0006): it distributes tables with either kind of column, but refuses to
undistribute, or to change the shard count of, a table with an identity column, and an
identity cannot be dropped once the table is distributed. Run this on every database, so
that one schema serves plain PostgreSQL and a cluster alike.

Downgrading puts the identity columns back, continuing from the sequences.
"""

from __future__ import annotations

from alembic import op
from sqlalchemy import text

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

TABLES = ("beliefs", "belief_events", "belief_sources", "memory_jobs")


def _next_id(table: str) -> int:
    """The first id not handed out yet: past the column's sequence and past every row."""
    bind = op.get_bind()
    last = bind.execute(
        text("SELECT pg_sequence_last_value(pg_get_serial_sequence(:t, 'id'))"), {"t": table}
    ).scalar()
    highest = bind.execute(text(f"SELECT max(id) FROM {table}")).scalar()
    return max(int(last or 0), int(highest or 0)) + 1


def _distributed(table: str) -> bool:
    bind = op.get_bind()
    if bind.execute(text("SELECT 1 FROM pg_extension WHERE extname = 'citus'")).first() is None:
        return False
    found = bind.execute(
        text("SELECT 1 FROM pg_dist_partition WHERE logicalrelid = CAST(:t AS regclass)"),
        {"t": table},
    )
    return found.first() is not None


def upgrade() -> None:
    for table in TABLES:
        if _distributed(table):
            raise RuntimeError(
                f"{table} was distributed by hand before revision 0005; Citus cannot drop an "
                f"identity column of a distributed table: run SELECT undistribute_table("
                f"'{table}') first (revision 0006 distributes it again)"
            )
        start = _next_id(table)
        op.execute(f"ALTER TABLE {table} ALTER COLUMN id DROP IDENTITY")
        op.execute(
            f"CREATE SEQUENCE {table}_id_seq AS bigint START WITH {start} OWNED BY {table}.id"
        )
        op.execute(f"ALTER TABLE {table} ALTER COLUMN id SET DEFAULT nextval('{table}_id_seq')")


def downgrade() -> None:
    for table in TABLES:
        start = _next_id(table)
        op.execute(f"ALTER TABLE {table} ALTER COLUMN id DROP DEFAULT")
        op.execute(f"DROP SEQUENCE {table}_id_seq")
        op.execute(
            f"ALTER TABLE {table} ALTER COLUMN id "
            f"ADD GENERATED ALWAYS AS IDENTITY (START WITH {start})"
        )
