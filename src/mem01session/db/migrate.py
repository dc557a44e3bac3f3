"""Alembic, wrapped: upgrade, downgrade, current, history and drift check.

Works from an installed wheel (the migrations ship inside the package as
``mem01session/_migrations``) and from a source checkout (``migrations/`` at the top).

Alembic is imported only by what runs migrations or walks their graph: opening a
database that is already at the head, and ``mem01session db current``, read the head
from the scripts' ``revision`` lines and the database's revision with one query, so that
a command that only reads memory does not load Alembic (a few tenths of a second).
SQLAlchemy too is imported only by what needs it: :func:`current` asks psycopg, so that
``mem01session db current`` loads neither.
"""

from __future__ import annotations

import inspect
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError, DatabaseError
from ..logs import describe
from .urls import libpq_url, sqlalchemy_url
from .vector_index import VECTOR_INDEX_PREFIX
from .versions import (
    LEGACY_VERSION_TABLE,
    VERSION_TABLE,
    current_of,
    current_of_psycopg,
    migrations_dir,
    script_revisions,
)

if TYPE_CHECKING:
    from alembic.config import Config
    from alembic.script import Script
    from sqlalchemy import Connection, MetaData

# Arbitrary constant shared by every process that migrates a mem01session database.
MIGRATION_LOCK_KEY = 0x6D656D3031  # "mem01"
LOCK_TIMEOUT_MS = 15_000
"""How long a migration waits for a lock on a table it changes (an open transaction that
read the table holds one): past it, it stops and says so, rather than wait without a word
while every later statement on that table queues behind it. Waiting for another upgrade
(the advisory lock) is not bounded."""


def _config(connection: Connection | None = None, **attributes: Any) -> Config:
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(migrations_dir()))
    cfg.attributes["connection"] = connection
    cfg.attributes.update(attributes)
    return cfg


def _script_directory() -> Any:
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(_config())


@cache
def head_revision() -> str:
    """The newest revision this library knows (read from the scripts, without Alembic;
    Alembic decides when the scripts do not form one plain line)."""
    revises = script_revisions()
    heads = set(revises) - set(revises.values())
    if len(heads) == 1:
        return heads.pop()
    head: str | None = _script_directory().get_current_head()
    assert head is not None
    return head


@dataclass(frozen=True)
class Revision:
    """One migration script."""

    revision: str
    down_revision: str | None
    doc: str
    is_head: bool
    loses: str = ""
    """What undoing it deletes, in words (:func:`describe_loss`); empty: nothing."""


def history() -> list[Revision]:
    """Every revision, oldest first."""
    script = _script_directory()
    revs = list(script.walk_revisions())
    heads = set(script.get_heads())
    return [
        Revision(
            revision=r.revision,
            down_revision=r.down_revision if isinstance(r.down_revision, str) else None,
            doc=(r.doc or "").strip(),
            is_head=r.revision in heads,
            loses=describe_loss(r),
        )
        for r in reversed(revs)
    ]


# Alembic keeps module-global state while it runs: one migration at a time per process.
_process_lock = threading.RLock()


@contextmanager
def _connect(url: str) -> Iterator[Connection]:
    from sqlalchemy import create_engine
    from sqlalchemy.exc import SQLAlchemyError
    from sqlalchemy.pool import NullPool

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
        raise DatabaseError(f"database error: {failure}{_setup_hint(failure)}")


def _setup_hint(failure: str) -> str:
    """What to do when the first migration lacks something the server must give it: the
    extensions it creates, or the right to create them or its tables."""
    if 'extension "' in failure and "is not available" in failure:
        return (
            "; install pgvector on the PostgreSQL server (https://github.com/pgvector/pgvector), "
            "or leave MEM01_DATABASE_URL unset to use the embedded server, which has it"
        )
    if 'permission denied to create extension "vector"' in failure:
        # pgvector is not a trusted extension: a database's owner may not create it either.
        return (
            "; pgvector is not a trusted extension: have a superuser run CREATE EXTENSION "
            "vector; CREATE EXTENSION btree_gin; in this database once, then upgrade again"
        )
    if "permission denied to create extension" in failure:
        return (
            "; grant this role CREATE on the database, or have a superuser run CREATE EXTENSION "
            "btree_gin; in it once, then upgrade again"
        )
    if "lock timeout" in failure:
        return (
            f"; another session held a lock on a table this migration changes for "
            f"{LOCK_TIMEOUT_MS / 1000:g} s (an open transaction that read it, say: see "
            "pg_stat_activity and pg_locks); end it, then upgrade again. Nothing was changed"
        )
    if "permission denied for schema" in failure:
        return (
            "; the role needs CREATE on the schema (GRANT CREATE ON SCHEMA public TO it, or make "
            "it the database's owner; PostgreSQL 15+ no longer grants that to every role)"
        )
    return ""


@contextmanager
def _target(action: str, revision: str) -> Iterator[None]:
    """Alembic's complaint about a revision (unknown, not reachable) as a ConfigError."""
    from alembic.script.revision import RevisionError
    from alembic.util import CommandError

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
    from alembic import command

    from .schema import DEFAULT_EMBEDDING_DIM

    with _connect(url) as conn:
        cfg = _config(
            conn,
            embedding_dim=embedding_dim or DEFAULT_EMBEDDING_DIM,
            embedding_model=embedding_model,
        )
        with _target("upgrade", revision):
            command.upgrade(cfg, revision)
        conn.commit()
        return current_of(conn)


def downgrade(url: str, revision: str) -> str | None:
    """Downgrade to ``revision`` (``base`` removes every table).

    :func:`downgrade_plan` says beforehand which migrations this undoes and whether any
    of them deletes data.
    """
    from alembic import command

    with _connect(url) as conn, _target("downgrade", revision):
        command.downgrade(_config(conn), revision)
        conn.commit()
        return current_of(conn)


@dataclass(frozen=True)
class DowngradeStep:
    """One migration a downgrade would undo."""

    revision: str
    doc: str
    deletes_data: bool
    """Its downgrade drops a table or a column, truncates, or deletes rows."""
    loses: str = ""
    """What it deletes, in words (``drops table episodes and column
    memory_users.episodes``); empty when it deletes nothing."""


# What a downgrade function must not do without the user's consent, in SQL or Alembic ops.
# (``DROP TABLE`` and ``op.drop_table`` alike.)
_DATA_LOSS = re.compile(
    r"\bdrop[_\s]+(table|column|schema)\b|\btruncate\b|\bdelete\s+from\b", re.IGNORECASE
)


def _downgrade_source(script: Script) -> str | None:
    try:
        return inspect.getsource(script.module.downgrade)
    except (OSError, TypeError, AttributeError):
        return None


def deletes_data(script: Script) -> bool:
    """Whether undoing ``script`` loses data, read from its ``downgrade`` source.

    Undoing the first migration (down to ``base``) always does; so does a migration whose
    source cannot be read.
    """
    if script.down_revision is None:
        return True
    source = _downgrade_source(script)
    return source is None or _DATA_LOSS.search(source) is not None


# Names a downgrade's SQL spells out; a name built at run time ("DROP TABLE {table}") is
# not one, and the loss is then described by its kind alone.
_DROPPED_TABLE = re.compile(r"\bdrop[_\s]+table\s*\(?\s*(?:if\s+exists\s+)?[\"']?(\w+)\b", re.I)
_DROPPED_COLUMN = re.compile(
    r"\balter\s+table\s+(\w+)\s+drop\s+column\s+(?:if\s+exists\s+)?(\w+)", re.I
)


def describe_loss(script: Script) -> str:
    """What undoing ``script`` deletes, in words; empty when :func:`deletes_data` is
    False. ``"drops every table"`` for the first migration."""
    if not deletes_data(script):
        return ""
    if script.down_revision is None:
        return "drops every table"
    source = _downgrade_source(script)
    if source is None:
        return "may delete data (its downgrade could not be read)"
    tables = list(dict.fromkeys(_DROPPED_TABLE.findall(source)))
    columns = list(dict.fromkeys(f"{t}.{c}" for t, c in _DROPPED_COLUMN.findall(source)))
    parts = []
    if tables:
        parts.append(("table " if len(tables) == 1 else "tables ") + ", ".join(tables))
    if columns:
        parts.append(("column " if len(columns) == 1 else "columns ") + ", ".join(columns))
    if not parts:  # names built at run time, or rows deleted
        dropped = re.search(r"\bdrop[_\s]+(table|column|schema)\b", source, re.I)
        return "drops tables or columns" if dropped else "deletes rows"
    return "drops " + " and ".join(parts)


def downgrade_plan(url: str, revision: str) -> list[DowngradeStep]:
    """The migrations a downgrade of the database at ``url`` to ``revision`` would undo,
    newest first (nothing is changed). A bad target raises :class:`ConfigError`."""
    with _connect(url) as conn:
        at = current_of(conn)
    script = _script_directory()
    with _target("downgrade", revision):
        scripts = list(script.iterate_revisions(at, revision, select_for_downgrade=True))
    return [
        DowngradeStep(s.revision, _summary(s.doc), deletes_data(s), describe_loss(s))
        for s in scripts
    ]


def _summary(doc: str | None) -> str:
    lines = (doc or "").strip().splitlines()
    return lines[0] if lines else ""


def current(url: str) -> str | None:
    """The revision the database is at, or None for an empty database.

    Asked with psycopg alone (no SQLAlchemy to load). When that fails, the question is
    asked again as the other functions here ask it, so that the error reads as theirs.
    """
    import psycopg

    try:
        with psycopg.connect(libpq_url(url)) as conn:
            return current_of_psycopg(conn)
    except psycopg.Error:
        pass
    with _connect(url) as conn:
        return current_of(conn)


def target_metadata_for(conn: Connection) -> MetaData:
    """The models the database is compared with (the newest revision's)."""
    from .schema import build_metadata

    return build_metadata()


def check(url: str) -> list[str]:
    """Differences between the models and the database; empty when in sync."""
    from alembic.autogenerate import compare_metadata
    from alembic.runtime.migration import MigrationContext

    with _connect(url) as conn:
        metadata = target_metadata_for(conn)
        ctx = MigrationContext.configure(
            conn,
            opts={
                "compare_type": True,
                "include_object": _compared,
            },
        )
        diffs = compare_metadata(ctx, metadata)
        conn.rollback()
    return [_describe(d) for d in diffs]


def _compared(obj: Any, name: str | None, type_: str, reflected: bool, compare_to: Any) -> bool:
    """What the drift check compares: this library's tables (not the version tables, nor
    an application's own in the same database), not the per-model HNSW
    indexes over episode vectors (made for whichever models a database holds, see
    :mod:`.vector_index`)."""
    if type_ == "table" and (name in (VERSION_TABLE, LEGACY_VERSION_TABLE) or compare_to is None):
        return False  # version tables, and an application's own tables beside this library's
    return not (type_ == "index" and (name or "").startswith(VECTOR_INDEX_PREFIX))


def _describe(diff: Any) -> str:
    if isinstance(diff, tuple) and diff:
        kind = diff[0]
        rest = ", ".join(str(getattr(x, "name", x)) for x in diff[1:])
        return f"{kind}: {rest}"
    return str(diff)
