"""Alembic environment for mem01session.

Run through ``mem01session db ...`` (or :mod:`mem01session.db.migrate`), which passes an
open connection and the embedding dimension in ``config.attributes``. Every run holds a
PostgreSQL advisory lock, so two processes upgrading at once apply each revision once.
"""

from __future__ import annotations

from alembic import context
from sqlalchemy import text

from mem01session.db.migrate import MIGRATION_LOCK_KEY, target_metadata_for

config = context.config
connection = config.attributes.get("connection")
if connection is None:  # pragma: no cover - plain `alembic` invocations
    raise RuntimeError("run migrations through `mem01session db ...`")

context.configure(
    connection=connection,
    target_metadata=target_metadata_for(connection),
    compare_type=True,
    compare_server_default=False,
    include_object=lambda obj, name, type_, reflected, compare_to: (
        not (type_ == "table" and name == "alembic_version")
    ),
)

with context.begin_transaction():
    connection.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": MIGRATION_LOCK_KEY})
    context.run_migrations()
