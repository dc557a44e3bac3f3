"""Opening a database: migrations required or automatic; any embedder may open it."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from mem01session.db import Database, migrate
from mem01session.errors import MigrationRequiredError


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


async def test_unreachable_server_is_a_clean_error() -> None:
    from mem01session.errors import DatabaseError

    with pytest.raises(DatabaseError) as info:
        await Database.open(url="postgresql://u:pw-sentinel-123@127.0.0.1:1/x")
    assert "pw-sentinel-123" not in str(info.value)
