"""Opening a database: migrations required or automatic; any embedder may open it."""

from __future__ import annotations

import asyncio
import socket

import pytest
from sqlalchemy import text

from mem01session.db import Database, migrate, urls
from mem01session.errors import MigrationRequiredError
from tests.pg import settled


async def test_open_runs_queries_with_vectors(db: Database) -> None:
    async with db.sa_engine.connect() as conn:
        row = (await conn.execute(text("SELECT '[1,2,3]'::vector <-> '[1,2,4]'::vector"))).one()
    assert row[0] == pytest.approx(1.0)


async def test_external_database_behind_head_names_the_command(empty_db_url: str) -> None:
    with pytest.raises(MigrationRequiredError, match="mem01session db upgrade"):
        await Database.open(url=empty_db_url)
    assert migrate.current(empty_db_url) is None  # nothing changed


async def test_auto_migrate_upgrades_an_external_database(empty_db_url: str) -> None:
    db = await Database.open(url=empty_db_url, auto_migrate=True, embedding_dim=24)
    await db.close()
    assert migrate.current(empty_db_url) == migrate.head_revision()


async def test_another_embedder_opens_the_same_database(db_url: str) -> None:
    # Every vector names its model: a database is no longer bound to the one it began with.
    db = await Database.open(url=db_url, embedding_model="another-model", embedding_dim=999)
    await db.close()


async def test_a_url_in_sqlalchemys_form_opens_like_libpqs(db_url: str) -> None:
    # The form SQLAlchemy and Alembic take; the direct pool's libpq refused it mid-run.
    db = await Database.open(url=db_url.replace("postgresql://", "postgresql+psycopg://", 1))
    try:
        assert await db.direct.fetch("SELECT 1 AS one", {}) == [{"one": 1}]
        assert db.url.startswith("postgresql://")
    finally:
        await db.close()


async def test_unreachable_server_is_a_clean_error() -> None:
    from mem01session.errors import DatabaseError

    with pytest.raises(DatabaseError) as info:
        await Database.open(url="postgresql://u:pw-sentinel-123@127.0.0.1:1/x")
    assert "pw-sentinel-123" not in str(info.value)


async def test_a_server_that_never_answers_fails_the_opening_within_the_connect_timeout(
    silent_server: tuple[int, list[socket.socket]], monkeypatch: pytest.MonkeyPatch
) -> None:
    from mem01session.errors import DatabaseError

    port, taken = silent_server
    monkeypatch.setattr(urls, "CONNECT_TIMEOUT_SECONDS", 1)  # the URL names none: this one
    url = f"postgresql://u:pw-sentinel-456@127.0.0.1:{port}/x"
    # Without a connect timeout the opening waited psycopg's 130 s; 60 s ends the test.
    with pytest.raises(DatabaseError, match="timeout") as info:
        await asyncio.wait_for(Database.open(url=url), 60)
    assert taken  # it did try that server
    assert "pw-sentinel-456" not in str(info.value)


def test_a_url_keeps_its_own_connect_timeout_and_gets_one_when_it_names_none() -> None:
    assert urls.with_connect_timeout("postgresql://h/db?connect_timeout=3") == (
        "postgresql://h/db?connect_timeout=3"
    )
    assert urls.with_connect_timeout("postgresql://u:p@h/db?sslmode=require") == (
        f"postgresql://u:p@h/db?sslmode=require&connect_timeout={urls.CONNECT_TIMEOUT_SECONDS}"
    )
    assert urls.with_connect_timeout("postgresql://h/db") == (
        f"postgresql://h/db?connect_timeout={urls.CONNECT_TIMEOUT_SECONDS}"
    )


def test_one_database_serves_loop_after_loop_and_gives_back_closed_loops_pools(
    db_url: str,
) -> None:
    """As a script that makes a new event loop per call (``asyncio.run``) uses it: every
    loop gets working pools, and a closed loop's connections are closed, not kept."""
    import asyncio

    import psycopg

    def backends() -> int:
        with psycopg.connect(db_url, autocommit=True) as conn:
            row = conn.execute(
                "SELECT count(*) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            ).fetchone()
        assert row is not None
        return int(row[0])

    async def use(db: Database) -> int:
        async with db.sa_engine.begin() as conn:  # a transaction: this loop's engine
            one = (await conn.execute(text("SELECT 1"))).scalar_one()
        rows = await db.direct.fetch("SELECT 2 AS two", {})  # the pool shared by all loops
        return int(one) + int(rows[0]["two"])

    db = asyncio.run(Database.open(url=db_url))
    loops = 6
    for _ in range(loops):
        assert asyncio.run(use(db)) == 3
    # The last loop's engine and the shared pool hold a connection each; the engines of
    # the closed loops were disposed of as the next loop started.
    assert backends() <= 2 < loops
    asyncio.run(db.close())
    assert settled(backends, 0) == 0  # each backend leaves once the server sees its close
