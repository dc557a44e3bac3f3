"""The browser in-process (Starlette's test client) on a fresh, seeded database."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from starlette.testclient import TestClient

from mem01session.embeddings import HashingEmbedder
from mem01session.ui import Access, create_app
from tests.conftest import TEST_DIM
from tests.pg import create_database, drop_database, with_database

from .seed import Seeded, seed

BASE = "http://127.0.0.1:8701"


@pytest.fixture
def env(db_url: str, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("MEM01_DATABASE_URL", db_url)
    monkeypatch.setenv("MEM01_EMBEDDING_MODEL", HashingEmbedder(TEST_DIM).name)
    return db_url


@pytest.fixture
def seeded(env: str) -> Seeded:
    return asyncio.run(seed())


@pytest.fixture
def access() -> Access:
    return Access()


@pytest.fixture
def client(seeded: Seeded, access: Access) -> Iterator[TestClient]:
    with TestClient(create_app(access=access), base_url=BASE, follow_redirects=False) as c:
        yield c


@pytest.fixture(scope="module")
def shared_env(pg_admin_url: str, template_db: str) -> Iterator[str]:
    """One seeded database for a module of read-only tests."""
    name = create_database(pg_admin_url, template=template_db)
    url = with_database(pg_admin_url, name)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MEM01_DATABASE_URL", url)
        patch.setenv("MEM01_EMBEDDING_MODEL", HashingEmbedder(TEST_DIM).name)
        yield url
    drop_database(pg_admin_url, name)


@pytest.fixture(scope="module")
def shared(shared_env: str) -> Iterator[tuple[TestClient, Seeded]]:
    """A client and what was seeded, shared by a module whose tests change nothing."""
    seeded = asyncio.run(seed())
    with TestClient(create_app(), base_url=BASE, follow_redirects=False) as c:
        yield c, seeded


def rows(db_url: str, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    """Read the database directly, to check what an action did."""
    with psycopg.connect(db_url) as conn:
        return list(conn.execute(sql, params).fetchall())


def ok(client: TestClient, path: str) -> str:
    """A page that answers 200 with HTML."""
    response = client.get(path)
    assert response.status_code == 200, (path, response.text)
    assert response.headers["content-type"].startswith("text/html")
    return response.text


def cells(page: str, needle: str) -> str:
    """The table row holding ``needle``."""
    return next(row for row in re.findall(r"<tr>.*?</tr>", page, re.S) if needle in row)


def csrf_of(html: str) -> str:
    match = re.search(r'name="csrf" value="([^"]+)"', html)
    assert match, "the page has a form with a CSRF token"
    return match.group(1)
