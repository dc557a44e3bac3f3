"""``mem01session db``: schema migrations."""

from __future__ import annotations

from typing import Annotated

import typer

from ._console import console
from ._errors import fail
from ._help import TidyCommand, TidyGroup
from ._settings import database_url, load_settings

app = typer.Typer(
    cls=TidyGroup, help="Create and migrate the PostgreSQL schema.", no_args_is_help=True
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
    from ..db import migrate

    settings = load_settings()
    model: str | None = None
    if embedding_dim is None:
        from ..embeddings import default_embedder

        embedder = default_embedder(settings)
        embedding_dim, model = embedder.dim, embedder.name
    if embedding_dim < 1 or embedding_dim > 16000:
        fail(f"--embedding-dim must be between 1 and 16000, got {embedding_dim}")
    url, embedded = database_url(settings)
    rev = migrate.upgrade(url, revision, embedding_dim=embedding_dim, embedding_model=model)
    where = "embedded PostgreSQL" if embedded else settings.safe_database_url
    console().print(f"upgraded {where} to [bold]{rev}[/]", highlight=False)


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

    A downgrade that undoes a migration whose downgrade drops tables or columns (or
    deletes rows) loses data, and is refused without --yes. Today that is 0001, the
    initial schema: any downgrade to 'base' drops every table, beliefs included.
    Undoing 0002 only drops an index.

    Example: mem01session db downgrade base --yes
    """
    from ..db import migrate

    url, _ = database_url(load_settings())
    lossy = [step for step in migrate.downgrade_plan(url, revision) if step.deletes_data]
    if lossy and not yes:
        undone = ", ".join(
            f"{s.revision} ({s.doc.rstrip('.')})" if s.doc else s.revision for s in lossy
        )
        fail(
            f"downgrading to {revision!r} undoes {undone}, which drops tables and the data "
            "in them; add --yes to confirm"
        )
    rev = migrate.downgrade(url, revision)
    console().print(f"downgraded to [bold]{rev or 'base'}[/]", highlight=False)


@app.command(cls=TidyCommand)
def current() -> None:
    """Print the revision the database is at ('base' for an empty database).

    Example: mem01session db current
    """
    from ..db import migrate

    url, _ = database_url(load_settings())
    rev = migrate.current(url)
    head = migrate.head_revision()
    suffix = " (head)" if rev == head else f" (head is {head})"
    console().print(f"{rev or 'base'}{suffix}", highlight=False)


@app.command(cls=TidyCommand)
def history() -> None:
    """List every migration, oldest first.

    Example: mem01session db history
    """
    from rich.table import Table

    from ..db import migrate

    table = Table("revision", "revises", "description")
    for rev in migrate.history():
        label = f"{rev.revision} (head)" if rev.is_head else rev.revision
        table.add_row(label, rev.down_revision or "-", rev.doc.splitlines()[0] if rev.doc else "")
    console().print(table)


@app.command(cls=TidyCommand)
def check() -> None:
    """Exit non-zero if the database differs from the models (schema drift).

    Example: mem01session db check
    """
    from ..db import migrate

    url, _ = database_url(load_settings())
    diffs = migrate.check(url)
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
    uses it (this command starts it if needed and stops it again when it exits: keep
    your application or `mem01session ui` running to connect to it).

    Example: psql "$(mem01session db url --show-password)"
    """
    from ..redaction import redact_dsn

    settings = load_settings()
    found, embedded = database_url(settings)
    typer.echo(found if show_password else redact_dsn(found))
    if embedded:
        typer.echo(
            "(the embedded server in MEM01_HOME; it stops when the last process using it exits)",
            err=True,
        )
