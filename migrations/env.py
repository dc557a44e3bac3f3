"""Alembic environment for mem01session.

Run through ``mem01session db ...`` (or :mod:`mem01session.db.migrate`), which passes an
open connection and the embedding dimension in ``config.attributes``. Every run holds a
PostgreSQL advisory lock, so two processes upgrading at once apply each revision once. The
revision is kept in a table of this library's own (``mem01session_version``), never in an
application's ``alembic_version``.
"""

from __future__ import annotations

from alembic import context
from sqlalchemy import text

from mem01session.db import migrate
from mem01session.db.migrate import MIGRATION_LOCK_KEY, target_metadata_for
from mem01session.db.versions import LEGACY_VERSION_TABLE, VERSION_TABLE, adopt_legacy_version

config = context.config
connection = config.attributes.get("connection")
if connection is None:  # pragma: no cover - plain `alembic` invocations
    raise RuntimeError("run migrations through `mem01session db ...`")

context.configure(
    connection=connection,
    target_metadata=target_metadata_for(connection),
    compare_type=True,
    compare_server_default=False,
    version_table=VERSION_TABLE,
    include_object=lambda obj, name, type_, reflected, compare_to: (
        not (type_ == "table" and name in (VERSION_TABLE, LEGACY_VERSION_TABLE))
    ),
)

with context.begin_transaction():
    connection.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": MIGRATION_LOCK_KEY})
    # Set once the other upgrades are waited for: only the tables' locks are bounded.
    connection.execute(
        text("SELECT set_config('lock_timeout', :t, true)"), {"t": f"{migrate.LOCK_TIMEOUT_MS}ms"}
    )
    adopt_legacy_version(connection)
    context.run_migrations()
