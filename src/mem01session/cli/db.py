"""``mem01session db``: schema migrations, and the embedded server kept running."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from ._console import console
from ._errors import fail
from ._help import TidyCommand, TidyGroup
from ._server import database_url
from ._settings import load_settings

if TYPE_CHECKING:
    from ..config import Settings

app = typer.Typer(
    cls=TidyGroup,
    help="Create and migrate the PostgreSQL schema; keep the embedded server running.",
    no_args_is_help=True,
)


@app.command(cls=TidyCommand)
def upgrade(
    revision: Annotated[str, typer.Argument(help="Target revision.")] = "head",
    embedding_dim: Annotated[
        int | None,
        typer.Option(help="Vector dimension for a new database (default: the embedder's)."),
    ] = None,
) -> None:
    """Upgrade the schema (to the newest revision by default).

    Example: mem01session db upgrade
    """
    from ..memory import schema

    settings = load_settings()
    model: str | None = None
    if embedding_dim is None:
        from ..embeddings import default_embedder

        embedder = default_embedder(settings)
        embedding_dim, model = embedder.dim, embedder.name
    if embedding_dim < 1 or embedding_dim > 16000:
        fail(f"--embedding-dim must be between 1 and 16000, got {embedding_dim}")
    url, embedded = database_url(settings)
    before = schema.schema_status(url).revision
    rev = schema.upgrade(url, revision, embedding_dim=embedding_dim, embedding_model=model)
    where = "the embedded PostgreSQL" if embedded else settings.safe_database_url
    head = " (head)" if rev == schema.head_revision() else ""
    order = [r.revision for r in schema.migrations()]
    behind = revision in order and rev in order and order.index(revision) < order.index(rev)
    if rev == before and behind:
        fail(
            f"{where} is at {rev}, past {revision}: an upgrade changes nothing; to go back, "
            f"mem01session db downgrade {revision}"
        )
    if rev == before:
        _say(f"{where} is already at {rev or 'base'}{head}; nothing to do")
    else:
        _say(f"upgraded {where} from {before or 'base'} to {rev}{head}")


# ``-1`` (one step down) is a revision here, not an unknown option.
@app.command(cls=TidyCommand, context_settings={"ignore_unknown_options": True})
def downgrade(
    revision: Annotated[
        str, typer.Argument(help="Target revision ('base': no tables at all; '-1': one step).")
    ],
    yes: Annotated[
        bool, typer.Option("--yes", help="Confirm a downgrade that deletes data.")
    ] = False,
) -> None:
    """Downgrade the schema to REVISION.

    Undoing a migration whose downgrade drops tables or columns (or deletes rows) loses
    the data in them, and is refused without --yes; the refusal names what each of them
    drops, and `mem01session db history` marks them. A downgrade to 'base' drops every
    table, beliefs included.

    Example: mem01session db downgrade base --yes
    """
    from ..memory import schema

    url, _ = database_url(load_settings())
    plan = schema.downgrade_plan(url, revision)
    lossy = [step for step in plan if step.deletes_data]
    if lossy and not yes:
        undone = "; ".join(
            f"{s.revision} ({s.doc.rstrip('.')}) {s.loses}" if s.doc else f"{s.revision} {s.loses}"
            for s in lossy
        )
        fail(
            f"downgrading to {revision!r} loses the data in what it drops: {undone}; "
            "add --yes to confirm"
        )
    if not plan:
        at = schema.schema_status(url).revision
        _say(f"the database is at {at or 'base'}; nothing to undo")
        return
    rev = schema.downgrade(url, revision)
    undone = ", ".join(step.revision for step in plan)
    _say(f"downgraded to {rev or 'base'} (undid {undone})")


@app.command(cls=TidyCommand)
def current() -> None:
    """Print the revision the database is at ('base' for an empty database).

    Example: mem01session db current
    """
    from ..memory import schema

    url, _ = database_url(load_settings())
    rev = schema.schema_status(url).revision
    head = schema.head_revision()
    suffix = " (head)" if rev == head else f" (head is {head})"
    _say(f"{rev or 'base'}{suffix}")


@app.command(cls=TidyCommand)
def history() -> None:
    """List every migration, oldest first.

    Example: mem01session db history
    """
    from rich.table import Table

    from ..memory import schema

    table = Table("revision", "revises", "description")
    table.add_column("undoing it", overflow="fold")
    for rev in schema.migrations():
        label = f"{rev.revision} (head)" if rev.is_head else rev.revision
        table.add_row(
            label,
            rev.down_revision or "-",
            rev.doc.splitlines()[0] if rev.doc else "",
            rev.loses or "loses no data",
        )
    console().print(table)


@app.command(cls=TidyCommand)
def check() -> None:
    """Exit non-zero if the database differs from the models (schema drift).

    Example: mem01session db check
    """
    from ..memory import schema

    url, _ = database_url(load_settings())
    diffs = schema.drift(url)
    if diffs:
        for d in diffs:
            console().print(f"drift: {d}", highlight=False)
        raise typer.Exit(1)
    console().print("models and migrations are in sync")


@app.command(cls=TidyCommand)
def url(
    show_password: Annotated[
        bool, typer.Option("--show-password", help="Print the password instead of ***.")
    ] = False,
) -> None:
    """Print the database URL the library uses (for psql and other tools).

    With nothing configured that is the embedded server's, which runs while a process
    uses it (this command starts it if needed and stops it again when it exits: run
    `mem01session db start` first, or keep your application or `mem01session ui`
    running, to connect to it).

    Example: psql "$(mem01session db url --show-password)"
    """
    from ..memory.embedded_server import server_status
    from ..secrets.redaction import redact_dsn

    settings = load_settings()
    found, embedded = database_url(settings, check=False)
    typer.echo(found if show_password else redact_dsn(found))
    if embedded:
        lasts = (
            "kept running until mem01session db stop"
            if server_status(settings.home).kept
            else "it stops when the last process using it exits"
        )
        typer.echo(f"(the embedded server in MEM01_HOME; {lasts})", err=True)


@app.command(cls=TidyCommand)
def start() -> None:
    """Keep the embedded PostgreSQL running between commands (started if needed).

    The commands that follow reuse it and answer at once; each would otherwise start and
    stop it, a second or more. Its database is migrated to the newest revision if needed,
    as the library does on first use. It runs until `mem01session db stop` or a reboot.

    Example: mem01session db start
    """
    from ..memory import schema
    from ..memory.embedded_server import keep_running
    from ._server import starting

    settings = _embedded_only(load_settings(), "start")
    url, kept = starting(settings.home, lambda: keep_running(settings.home), kept=True)
    at, head = schema.schema_status(url).revision, schema.head_revision()
    if at != head:
        from ..embeddings import default_embedder

        embedder = default_embedder(settings)
        schema.upgrade(url, embedding_dim=embedder.dim, embedding_model=embedder.name)
    state = "already kept running" if kept else "kept running"
    _show_status(settings, f"{state}; its database is at {head} (head)")


@app.command(cls=TidyCommand)
def stop() -> None:
    """Stop keeping the embedded PostgreSQL running.

    It stops now, or when the last process still using it (your application,
    `mem01session ui`) exits.

    Example: mem01session db stop
    """
    from ..memory.embedded_server import server_status, stop_keeping

    settings = _embedded_only(load_settings(), "stop")
    if not server_status(settings.home).running:
        _show_status(settings, "not running")
        return
    after = stop_keeping(settings.home)
    if not after.running:
        _show_status(settings, "stopped")
        return
    pids = ", ".join(str(p) for p in after.holders)
    _show_status(settings, f"no longer kept; it stops when the processes using it exit ({pids})")


@app.command(cls=TidyCommand)
def status() -> None:
    """Whether the embedded PostgreSQL runs, is kept running, and who uses it.

    Exits 1 when it is not running.

    Example: mem01session db status
    """
    from ..memory.embedded_server import server_status

    settings = _embedded_only(load_settings(), "status")
    found = server_status(settings.home)
    if not found.running:
        _show_status(settings, "not running (each command starts it, and stops it after)")
        raise typer.Exit(1)
    kept = "kept running (mem01session db stop: stop keeping it)" if found.kept else "running"
    users = ", ".join(str(p) for p in found.holders) or "none"
    _show_status(settings, f"{kept}; server pid {found.pid}; processes using it: {users}")


def _embedded_only(settings: Settings, action: str) -> Settings:
    if settings.database_url:
        fail(
            f"{settings.database_url_variable} is set, so the commands use that server; "
            f"`db {action}` is about the embedded one (unset it to use the embedded server)"
        )
    return settings


def _show_status(settings: Settings, what: str) -> None:
    _say(f"embedded PostgreSQL in {settings.home.expanduser().resolve() / 'pg'}: {what}")


def _say(line: str) -> None:
    """One line of plain text (a URL or a path in it is never wrapped or read as markup)."""
    console().print(line, highlight=False, markup=False, soft_wrap=True)
