"""Which revision a database is at, and where that is kept.

The revision is kept in a table of this library's own (:data:`VERSION_TABLE`), never in
Alembic's default ``alembic_version``, which an application's own Alembic may keep in the
same database; releases before 0.2 kept it there, and :func:`adopt_legacy_version` moves
it. The revisions this library has are read from the scripts' ``revision`` lines, without
Alembic (a few tenths of a second to import).
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import DatabaseError

if TYPE_CHECKING:
    import psycopg
    from sqlalchemy import Connection


def migrations_dir() -> Path:
    """Where the migration scripts live, installed or in a checkout."""
    here = Path(__file__).resolve().parent.parent
    for candidate in (here / "_migrations", here.parent.parent / "migrations"):
        if (candidate / "env.py").is_file():
            return candidate
    raise DatabaseError("mem01session's migration scripts were not found; reinstall the package")


@cache
def script_revisions() -> dict[str, str | None]:
    """``revision -> down_revision`` of every script, from its module-level assignments."""
    found: dict[str, str | None] = {}
    for path in sorted((migrations_dir() / "versions").glob("*.py")):
        values: dict[str, object] = {}
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            target = node.targets[0] if isinstance(node, ast.Assign) else None
            if isinstance(node, ast.AnnAssign):
                target = node.target
            value = getattr(node, "value", None)
            if isinstance(target, ast.Name) and isinstance(value, ast.Constant):
                values[target.id] = value.value
        revision, down = values.get("revision"), values.get("down_revision")
        if isinstance(revision, str) and (down is None or isinstance(down, str)):
            found[revision] = down
    return found


VERSION_TABLE = "mem01session_version"
"""Where the revision is kept: a table of this library's own, so that an application whose
own Alembic keeps ``alembic_version`` in the same database and this library never read
(and fail on) each other's revisions."""
LEGACY_VERSION_TABLE = "alembic_version"
"""Where releases before 0.2 kept it; :func:`adopt_legacy_version` moves it out."""

# Which version tables exist, found on the search path as Alembic looks for them: this
# library's; Alembic's default, when this library's schema is there too (kept by an older
# release, or an application's own); then the revisions each holds.
VERSION_TABLE_SQL = (
    f"SELECT to_regclass('{VERSION_TABLE}') IS NOT NULL, "
    f"to_regclass('{LEGACY_VERSION_TABLE}') IS NOT NULL AND to_regclass('memory_meta') IS NOT NULL"
)
VERSIONS_SQL = f"SELECT version_num FROM {VERSION_TABLE}"
LEGACY_VERSIONS_SQL = f"SELECT version_num FROM {LEGACY_VERSION_TABLE}"


def revision_of(found: Sequence[object]) -> str | None:
    """The revision that :data:`VERSIONS_SQL`'s values say the database is at."""
    if len(found) > 1:
        raise DatabaseError(
            f"the database is at several revisions at once: {sorted(map(str, found))}"
        )
    return str(found[0]) if found else None


def legacy_revision_of(found: Sequence[object]) -> str | None:
    """The revision an older release recorded in :data:`LEGACY_VERSION_TABLE`: the one of
    its values that is a revision of this library (an application's own are not)."""
    return revision_of([v for v in found if str(v) in script_revisions()])


def current_of(conn: Connection) -> str | None:
    """The revision the database is at, None when none is recorded."""
    from sqlalchemy import text

    own, legacy = conn.execute(text(VERSION_TABLE_SQL)).one()
    if own:
        return revision_of(conn.execute(text(VERSIONS_SQL)).scalars().all())
    if legacy:
        return legacy_revision_of(conn.execute(text(LEGACY_VERSIONS_SQL)).scalars().all())
    return None


def current_of_psycopg(conn: psycopg.Connection[tuple[object, ...]]) -> str | None:
    """:func:`current_of` on a plain psycopg connection."""
    row = conn.execute(VERSION_TABLE_SQL).fetchone()
    own, legacy = row if row is not None else (False, False)
    if own:
        return revision_of([r[0] for r in conn.execute(VERSIONS_SQL).fetchall()])
    if legacy:
        return legacy_revision_of([r[0] for r in conn.execute(LEGACY_VERSIONS_SQL).fetchall()])
    return None


def adopt_legacy_version(conn: Connection) -> None:
    """Move this library's revision from :data:`LEGACY_VERSION_TABLE` (where releases
    before 0.2 kept it) to :data:`VERSION_TABLE`, leaving an application's own revision
    where it is (the table is dropped when nothing else is left in it). Run by every
    migration under its lock, before Alembic reads the revision."""
    from sqlalchemy import text

    own, legacy = conn.execute(text(VERSION_TABLE_SQL)).one()
    if own or not legacy:
        return
    ours = [v for v in conn.execute(text(LEGACY_VERSIONS_SQL)).scalars() if v in script_revisions()]
    if not ours:
        return
    conn.execute(
        text(
            f"CREATE TABLE {VERSION_TABLE} (version_num VARCHAR(32) NOT NULL, "
            f"CONSTRAINT {VERSION_TABLE}_pkc PRIMARY KEY (version_num))"
        )
    )
    for version in ours:
        conn.execute(text(f"INSERT INTO {VERSION_TABLE} VALUES (:v)"), {"v": version})
        conn.execute(
            text(f"DELETE FROM {LEGACY_VERSION_TABLE} WHERE version_num = :v"), {"v": version}
        )
    if conn.execute(text(f"SELECT count(*) FROM {LEGACY_VERSION_TABLE}")).scalar() == 0:
        conn.execute(text(f"DROP TABLE {LEGACY_VERSION_TABLE}"))
