"""Alembic, wrapped: upgrade, downgrade, current, history and drift check.

Works from an installed wheel (the migrations ship inside the package as
``mem01session/_migrations``) and from a source checkout (``migrations/`` at the top).
"""

from __future__ import annotations

import inspect
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import Script, ScriptDirectory
from alembic.script.revision import RevisionError
from alembic.util import CommandError
from sqlalchemy import Connection, MetaData, create_engine
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.pool import NullPool

from ..errors import ConfigError, DatabaseError
from ..logs import describe
from .schema import DEFAULT_EMBEDDING_DIM, build_metadata
from .urls import sqlalchemy_url

# Arbitrary constant shared by every process that migrates a mem01session database.
MIGRATION_LOCK_KEY = 0x6D656D3031  # "mem01"


def migrations_dir() -> Path:
    """Where the migration scripts live, installed or in a checkout."""
    here = Path(__file__).resolve().parent.parent
    for candidate in (here / "_migrations", here.parent.parent / "migrations"):
        if (candidate / "env.py").is_file():
            return candidate
    raise DatabaseError("mem01session's migration scripts were not found; reinstall the package")


def _config(connection: Connection | None = None, **attributes: Any) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(migrations_dir()))
    cfg.attributes["connection"] = connection
    cfg.attributes.update(attributes)
    return cfg


def head_revision() -> str:
    """The newest revision this library knows."""
    head = ScriptDirectory.from_config(_config()).get_current_head()
    assert head is not None
    return head


@dataclass(frozen=True)
class Revision:
    """One migration script."""

    revision: str
    down_revision: str | None
    doc: str
    is_head: bool


def history() -> list[Revision]:
    """Every revision, oldest first."""
    script = ScriptDirectory.from_config(_config())
    revs = list(script.walk_revisions())
    heads = set(script.get_heads())
    return [
        Revision(
            revision=r.revision,
            down_revision=r.down_revision if isinstance(r.down_revision, str) else None,
            doc=(r.doc or "").strip(),
            is_head=r.revision in heads,
        )
        for r in reversed(revs)
    ]


# Alembic keeps module-global state while it runs: one migration at a time per process.
_process_lock = threading.RLock()


@contextmanager
def _connect(url: str) -> Iterator[Connection]:
    engine = create_engine(sqlalchemy_url(url), poolclass=NullPool)
    failure: str | None = None
    try:
        with _process_lock, engine.connect() as conn:
            yield conn
    except SQLAlchemyError as exc:
        failure = f"{type(exc).__name__}: {describe(exc).partition(': ')[2]}"
    finally:
        engine.dispose()
    if failure is not None:  # outside the except block: the driver's error is no context
        raise DatabaseError(f"database error: {failure}")


@contextmanager
def _target(action: str, revision: str) -> Iterator[None]:
    """Alembic's complaint about a revision (unknown, not reachable) as a ConfigError."""
    try:
        yield
    except (CommandError, RevisionError) as exc:
        known = ", ".join(["base", *(r.revision for r in history())])
        raise ConfigError(
            f"cannot {action} to {revision!r}: {str(exc).rstrip('.')} (revisions: {known})"
        ) from None


def upgrade(
    url: str,
    revision: str = "head",
    *,
    embedding_dim: int | None = None,
    embedding_model: str | None = None,
) -> str | None:
    """Upgrade to ``revision``; returns the revision the database is at afterwards.

    ``embedding_dim`` and ``embedding_model`` are recorded by revision 0001 when it
    creates the schema; they are ignored for a database that already has it.
    """
    with _connect(url) as conn:
        cfg = _config(
            conn,
            embedding_dim=embedding_dim or DEFAULT_EMBEDDING_DIM,
            embedding_model=embedding_model,
        )
        with _target("upgrade", revision):
            command.upgrade(cfg, revision)
        conn.commit()
        return _current(conn)


def downgrade(url: str, revision: str) -> str | None:
    """Downgrade to ``revision`` (``base`` removes every table).

    :func:`downgrade_plan` says beforehand which migrations this undoes and whether any
    of them deletes data.
    """
    with _connect(url) as conn, _target("downgrade", revision):
        command.downgrade(_config(conn), revision)
        conn.commit()
        return _current(conn)


@dataclass(frozen=True)
class DowngradeStep:
    """One migration a downgrade would undo."""

    revision: str
    doc: str
    deletes_data: bool
    """Its downgrade drops a table or a column, truncates, or deletes rows."""


# What a downgrade function must not do without the user's consent, in SQL or Alembic ops.
# (``DROP TABLE`` and ``op.drop_table`` alike.)
_DATA_LOSS = re.compile(
    r"\bdrop[_\s]+(table|column|schema)\b|\btruncate\b|\bdelete\s+from\b", re.IGNORECASE
)


def deletes_data(script: Script) -> bool:
    """Whether undoing ``script`` loses data, read from its ``downgrade`` source.

    Undoing the first migration (down to ``base``) always does; so does a migration whose
    source cannot be read.
    """
    if script.down_revision is None:
        return True
    try:
        source = inspect.getsource(script.module.downgrade)
    except (OSError, TypeError, AttributeError):
        return True
    return _DATA_LOSS.search(source) is not None


def downgrade_plan(url: str, revision: str) -> list[DowngradeStep]:
    """The migrations a downgrade of the database at ``url`` to ``revision`` would undo,
    newest first (nothing is changed). A bad target raises :class:`ConfigError`."""
    with _connect(url) as conn:
        at = _current(conn)
    script = ScriptDirectory.from_config(_config())
    with _target("downgrade", revision):
        scripts = list(script.iterate_revisions(at, revision, select_for_downgrade=True))
    return [DowngradeStep(s.revision, _summary(s.doc), deletes_data(s)) for s in scripts]


def _summary(doc: str | None) -> str:
    lines = (doc or "").strip().splitlines()
    return lines[0] if lines else ""


def _current(conn: Connection) -> str | None:
    return MigrationContext.configure(conn).get_current_revision()


def current(url: str) -> str | None:
    """The revision the database is at, or None for an empty database."""
    with _connect(url) as conn:
        return _current(conn)


def target_metadata_for(conn: Connection) -> MetaData:
    """The models the database is compared with (the newest revision's)."""
    return build_metadata()


def check(url: str) -> list[str]:
    """Differences between the models and the database; empty when in sync."""
    with _connect(url) as conn:
        metadata = target_metadata_for(conn)
        ctx = MigrationContext.configure(
            conn,
            opts={
                "compare_type": True,
                "include_object": lambda obj, name, type_, reflected, compare_to: (
                    not (type_ == "table" and name == "alembic_version")
                ),
            },
        )
        diffs = compare_metadata(ctx, metadata)
        conn.rollback()
    return [_describe(d) for d in diffs]


def _describe(diff: Any) -> str:
    if isinstance(diff, tuple) and diff:
        kind = diff[0]
        rest = ", ".join(str(getattr(x, "name", x)) for x in diff[1:])
        return f"{kind}: {rest}"
    return str(diff)
