"""Worker fixtures: one migrated database per module, users as isolation (each test drains
the jobs it made, so a worker of one test never finds another test's)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator

import pytest
import pytest_asyncio

from mem01session.db import Database
from mem01session.embeddings import HashingEmbedder
from mem01session.engine import BeliefEngine
from tests.conftest import TEST_DIM
from tests.pg import create_database, drop_database, with_database


@pytest.fixture(scope="module")
def module_db_url(pg_admin_url: str, template_db: str) -> Iterator[str]:
    name = create_database(pg_admin_url, template=template_db)
    yield with_database(pg_admin_url, name)
    drop_database(pg_admin_url, name)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def module_db(module_db_url: str) -> AsyncIterator[Database]:
    """Use from modules marked ``pytest.mark.asyncio(loop_scope="module")``."""
    embedder = HashingEmbedder(TEST_DIM)
    database = await Database.open(
        url=module_db_url, embedding_model=embedder.name, embedding_dim=embedder.dim
    )
    yield database
    await database.close()


@pytest.fixture
def module_engine(module_db: Database) -> BeliefEngine:
    return BeliefEngine(module_db, HashingEmbedder(TEST_DIM))


@pytest.fixture
def uid() -> str:
    """A user id no other test uses."""
    return f"user-{uuid.uuid4().hex[:10]}"
