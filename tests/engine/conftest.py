"""Write-path fixtures: an engine on a fresh database with a clock that ticks per call."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta

import pytest
import pytest_asyncio

from mem01session.db import Database
from mem01session.embeddings import HashingEmbedder
from mem01session.engine import BeliefEngine
from tests.conftest import TEST_DIM
from tests.pg import create_database, drop_database, with_database

START = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


class TickingClock:
    """Every reading is one second after the previous one: distinct, ordered timestamps."""

    def __init__(self, start: datetime = START) -> None:
        self.now = start

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now


@pytest.fixture
def clock() -> TickingClock:
    return TickingClock()


@pytest.fixture
def engine(db: Database, embedder: HashingEmbedder, clock: TickingClock) -> BeliefEngine:
    return BeliefEngine(db, embedder, clock=clock)


@pytest.fixture(scope="module")
def module_db_url(pg_admin_url: str, template_db: str) -> Iterator[str]:
    """One migrated database per test module, for tests isolated by user id instead."""
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
def uid() -> str:
    """A user id no other test uses."""
    return f"user-{uuid.uuid4().hex[:10]}"
