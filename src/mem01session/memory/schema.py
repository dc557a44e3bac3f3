"""The schema's revisions, for the operator: where a database is, moving it up or down,
the list of migrations, and drift from the models (what ``mem01session db`` runs).

Each function takes a database URL and runs the library's Alembic migrations on it;
a ``Memory`` migrates an embedded database by itself when it opens it, and refuses
another one that is behind (:class:`~mem01session.errors.MigrationRequiredError`).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..db.migrate import (
    DowngradeStep,
    Revision,
    current,
    downgrade,
    downgrade_plan,
    head_revision,
    upgrade,
)
from ..db.migrate import check as drift
from ..db.migrate import history as migrations


@dataclass(frozen=True)
class SchemaStatus:
    """The revision a database is at, and this library's newest."""

    revision: str | None
    """None: an empty database (no schema)."""
    head: str

    @property
    def at_head(self) -> bool:
        return self.revision == self.head


def schema_status(url: str) -> SchemaStatus:
    """Where the database at ``url`` is (read with psycopg alone)."""
    return SchemaStatus(current(url), head_revision())


__all__ = [
    "DowngradeStep",
    "Revision",
    "SchemaStatus",
    "downgrade",
    "downgrade_plan",
    "drift",
    "head_revision",
    "migrations",
    "schema_status",
    "upgrade",
]
