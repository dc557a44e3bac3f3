"""Fixtures of the ``citus`` tests: the suite's database fixtures, on the cluster.

Every database these tests get is a fresh Citus database (see :mod:`tests.citus.cluster`)
migrated by the library's own migrations, which distribute the tables by ``user_id``.
Test modules here reuse tests of other folders by importing them; the fixtures those
tests need are imported below, so that they resolve against the cluster's databases.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from mem01session.db import migrate
from mem01session.embeddings import HashingEmbedder
from tests.citus.cluster import CITUS_URL, REASON, create_database, database_url, drop_database
from tests.conftest import TEST_DIM
from tests.engine.conftest import clock, module_db, uid
from tests.queue.conftest import module_engine
from tests.session.conftest import extractor, make_session, memories, memory

__all__ = [
    "clock",
    "extractor",
    "make_session",
    "memories",
    "memory",
    "module_db",
    "module_engine",
    "uid",
]


def _migrated(admin_url: str) -> str:
    name = create_database(admin_url)
    migrate.upgrade(
        database_url(admin_url, name),
        embedding_dim=TEST_DIM,
        embedding_model=HashingEmbedder(TEST_DIM).name,
    )
    return name


@pytest.fixture(scope="session")
def pg_admin_url() -> str:
    if not CITUS_URL:
        pytest.skip(REASON)
    return CITUS_URL


@pytest.fixture
def empty_db_url(pg_admin_url: str) -> Iterator[str]:
    """A fresh Citus database with no schema."""
    name = create_database(pg_admin_url)
    yield database_url(pg_admin_url, name)
    drop_database(pg_admin_url, name)


@pytest.fixture
def db_url(pg_admin_url: str) -> Iterator[str]:
    """A fresh Citus database at head: the tables distributed by user_id."""
    name = _migrated(pg_admin_url)
    yield database_url(pg_admin_url, name)
    drop_database(pg_admin_url, name)


@pytest.fixture(scope="module")
def module_db_url(pg_admin_url: str) -> Iterator[str]:
    name = _migrated(pg_admin_url)
    yield database_url(pg_admin_url, name)
    drop_database(pg_admin_url, name)
