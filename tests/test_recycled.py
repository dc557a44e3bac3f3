"""The suite's recycled databases are handed out just like fresh clones of the template."""

from __future__ import annotations

import psycopg
import pytest

from tests.pg import with_database
from tests.recycled import Recycler

WRITE = (
    "INSERT INTO memory_users (user_id) VALUES ('u1');"
    "INSERT INTO beliefs (user_id, content, norm_content) VALUES ('u1', 'Lives in Oslo', 'oslo')"
)

# The sizes of the beliefs table and its indexes, and the statistics of its columns.
PLANNER_KNOWS = (
    "SELECT relname, relpages, reltuples, (SELECT count(*) FROM pg_statistic s "
    "WHERE s.starelid = c.oid) FROM pg_class c WHERE relname LIKE 'beliefs%' ORDER BY 1"
)


def names(admin_url: str) -> set[str]:
    with psycopg.connect(admin_url) as conn:
        return {r[0] for r in conn.execute("SELECT datname FROM pg_database")}


def test_a_database_handed_back_comes_back_empty_with_its_sequences_reset(
    pg_admin_url: str, template_db: str
) -> None:
    pool = Recycler(pg_admin_url, template_db)
    name = pool.take()
    url = with_database(pg_admin_url, name)
    with psycopg.connect(url) as conn:
        conn.execute(WRITE)
        [(first_id,)] = conn.execute("SELECT id FROM beliefs").fetchall()
        fresh = conn.execute(PLANNER_KNOWS).fetchall()
        conn.commit()
        conn.execute("ANALYZE beliefs")
        assert conn.execute(PLANNER_KNOWS).fetchall() != fresh
    left_open = psycopg.connect(url)  # a connection the test forgot: closed for it
    try:
        pool.give_back(name)
        assert pool.take() == name
        with psycopg.connect(url) as conn:
            assert conn.execute("SELECT count(*) FROM beliefs").fetchone() == (0,)
            assert conn.execute("SELECT count(*) FROM memory_users").fetchone() == (0,)
            assert conn.execute(PLANNER_KNOWS).fetchall() == fresh
            conn.execute(WRITE)
            assert conn.execute("SELECT id FROM beliefs").fetchone() == (first_id,)
            [(version,)] = conn.execute("SELECT version_num FROM mem01session_version").fetchall()
        with pytest.raises(psycopg.OperationalError):
            left_open.execute("SELECT 1")
    finally:
        left_open.close()
        pool.give_back(name)
        pool.close()
    assert name not in names(pg_admin_url)
    with psycopg.connect(with_database(pg_admin_url, template_db)) as conn:
        assert conn.execute("SELECT version_num FROM mem01session_version").fetchone() == (version,)


def test_a_database_whose_schema_or_template_rows_changed_is_dropped(
    pg_admin_url: str, template_db: str
) -> None:
    pool = Recycler(pg_admin_url, template_db)
    for change in (
        "CREATE INDEX extra ON beliefs (content)",
        "CREATE TABLE extra (x int)",
        "ALTER TABLE beliefs ADD COLUMN extra int",
        "UPDATE mem01session_version SET version_num = 'other'",
        "ALTER DATABASE {name} SET work_mem = '1MB'",
    ):
        name = pool.take()
        with psycopg.connect(with_database(pg_admin_url, name), autocommit=True) as conn:
            conn.execute(change.format(name=name))
        pool.give_back(name)
        assert name not in names(pg_admin_url), change
    pool.close()
