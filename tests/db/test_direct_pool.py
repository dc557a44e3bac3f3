"""DirectPool: single autocommit statements on plain psycopg connections (the per-run path)."""

from __future__ import annotations

import asyncio
from typing import Any

import psycopg
import pytest

from mem01session.db.direct import DirectPool
from mem01session.db.vectors import BinaryVector, BinaryVectors

BACKEND = "SELECT pg_backend_pid() AS pid"


async def test_statements_reuse_an_idle_connection(db_url: str) -> None:
    pool = DirectPool(db_url)
    try:
        first = await pool.fetch(BACKEND, {})
        second = await pool.fetch(BACKEND, {})
        assert first == second  # the same backend served both
        assert await pool.fetch("SELECT %(x)s::int + 1 AS y", {"x": 41}) == [{"y": 42}]
    finally:
        await pool.close()


async def test_each_statement_commits_on_its_own(db_url: str) -> None:
    pool = DirectPool(db_url)
    try:
        await pool.fetch("CREATE TABLE t (x int)", {})
        await pool.fetch("INSERT INTO t VALUES (%(x)s)", {"x": 1})
        with psycopg.connect(db_url) as other:  # another session sees it: committed
            assert other.execute("SELECT x FROM t").fetchall() == [(1,)]
    finally:
        await pool.close()


async def test_a_connection_killed_while_idle_is_replaced_transparently(db_url: str) -> None:
    pool = DirectPool(db_url)
    try:
        [old] = await pool.fetch(BACKEND, {})
        with psycopg.connect(db_url, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (old["pid"],))
        [new] = await pool.fetch(BACKEND, {})  # no error reaches the caller
        assert new["pid"] != old["pid"]
    finally:
        await pool.close()


async def test_a_failing_statement_raises_and_leaves_the_pool_usable(db_url: str) -> None:
    pool = DirectPool(db_url, max_open=1)
    try:
        with pytest.raises(psycopg.errors.UndefinedTable):
            await pool.fetch("SELECT * FROM no_such_table", {})
        # max_open=1: this would wait forever had the failed statement kept its slot
        assert await pool.fetch("SELECT 1 AS one", {}) == [{"one": 1}]
    finally:
        await pool.close()


async def test_an_unreachable_server_fails_at_once() -> None:
    pool = DirectPool("postgresql://nobody@127.0.0.1:1/none?connect_timeout=2")
    with pytest.raises(psycopg.OperationalError):
        await pool.fetch("SELECT 1", {})


async def test_at_most_max_open_statements_run_at_once(db_url: str) -> None:
    pool = DirectPool(db_url, max_open=2)
    gate = asyncio.Event()
    connecting = 0
    real_connect = pool._connect

    async def gated_connect() -> psycopg.AsyncConnection[dict[str, object]]:
        nonlocal connecting
        connecting += 1
        await gate.wait()
        return await real_connect()

    pool._connect = gated_connect  # type: ignore[method-assign]
    tasks = [asyncio.create_task(pool.fetch("SELECT 1 AS one", {})) for _ in range(3)]
    for _ in range(10):  # every task gets to run as far as it can without I/O
        await asyncio.sleep(0)
    assert connecting == 2  # the third waits for a slot
    gate.set()
    assert await asyncio.gather(*tasks) == [[{"one": 1}]] * 3
    assert connecting == 2  # and then reuses a returned connection
    await pool.close()


async def test_a_closed_pool_refuses_statements(db_url: str) -> None:
    pool = DirectPool(db_url)
    await pool.fetch("SELECT 1", {})
    await pool.close()
    with pytest.raises(RuntimeError, match="closed"):
        await pool.fetch("SELECT 1", {})


def test_bad_limits_are_refused() -> None:
    with pytest.raises(ValueError, match="max_open"):
        DirectPool("postgresql://x", max_open=0)


def test_repr_hides_the_password() -> None:
    assert "s3cret" not in repr(DirectPool("postgresql://u:s3cret@host/db"))


async def test_a_statement_timeout_is_not_retried(db_url: str) -> None:
    pool = DirectPool(db_url)
    try:
        await pool.fetch("SET statement_timeout = '50ms'", {})  # the idle connection keeps it
        with pytest.raises(psycopg.errors.QueryCanceled):
            await pool.fetch("SELECT pg_sleep(5)", {})
        # the connection survived the timeout and is reused, setting and all
        [row] = await pool.fetch("SHOW statement_timeout", {})
        assert row["statement_timeout"] == "50ms"
    finally:
        await pool.close()


async def test_a_vector_parameter_goes_in_binary_on_the_pool_and_as_text_elsewhere(
    db_url: str,
) -> None:
    vector = BinaryVector([0.1, -2.5, 3.0])
    typed = "SELECT pg_typeof(%(v)s)::text AS sent_as"
    cast = "SELECT CAST(%(v)s AS vector)::text AS v"
    pool = DirectPool(db_url)
    try:
        assert await pool.fetch(typed, {"v": vector}) == [{"sent_as": "vector"}]  # binary
        [row] = await pool.fetch(cast, {"v": vector})
    finally:
        await pool.close()
    with psycopg.connect(db_url) as plain:  # no type registered: text, cast in SQL
        with pytest.raises(psycopg.errors.IndeterminateDatatype):  # untyped text
            plain.execute(typed, {"v": vector})
        plain.rollback()
        [(text,)] = plain.execute(cast, {"v": vector}).fetchall()
    assert text == row["v"] == "[0.1,-2.5,3]"


async def test_a_list_of_vectors_goes_in_binary_on_the_pool_and_as_text_elsewhere(
    db_url: str,
) -> None:
    vectors = BinaryVectors([BinaryVector([0.5, 1.0]), BinaryVector([-2.0, 3.25])])
    typed = "SELECT pg_typeof(%(vs)s)::text AS sent_as"
    cast = "SELECT CAST(v AS text) AS v FROM unnest(CAST(%(vs)s AS vector[])) AS v"
    pool = DirectPool(db_url)
    try:
        assert await pool.fetch(typed, {"vs": vectors}) == [{"sent_as": "vector[]"}]  # binary
        rows = await pool.fetch(cast, {"vs": vectors})
        assert await pool.fetch(cast, {"vs": BinaryVectors([])}) == []
    finally:
        await pool.close()
    with psycopg.connect(db_url) as plain:  # no type registered: text, cast in SQL
        texts = [t for (t,) in plain.execute(cast, {"vs": vectors}).fetchall()]
    assert [r["v"] for r in rows] == texts == ["[0.5,1]", "[-2,3.25]"]


@pytest.mark.parametrize("bad", [[], [[1.0, 2.0]], [0.0] * 70_000])
def test_a_vector_parameter_needs_one_to_65535_dimensions(bad: Any) -> None:
    with pytest.raises(ValueError, match="1 to 65535 dimensions"):
        BinaryVector(bad)


async def test_statements_are_prepared_at_once_with_a_generic_plan(db_url: str) -> None:
    """Planned once per connection: the recall's statement takes longer to plan than to
    run, and the server settles on the generic plan after five executions anyway."""
    pool = DirectPool(db_url)
    try:
        [row] = await pool.fetch("SHOW plan_cache_mode", {})
        assert row == {"plan_cache_mode": "force_generic_plan"}
        query = "SELECT %(x)s::int AS x"
        await pool.fetch(query, {"x": 1})
        [seen] = await pool.fetch(
            "SELECT count(*) AS n FROM pg_prepared_statements WHERE statement LIKE %(q)s",
            {"q": "%::int AS x"},
        )
        assert seen["n"] == 1  # prepared at its first execution
    finally:
        await pool.close()


async def test_fill_opens_the_connections_kept_idle_and_they_serve_statements(
    db_url: str,
) -> None:
    pool = DirectPool(db_url, max_open=4, max_idle=3)
    try:
        assert await pool.fill() == 3
        assert pool.idle == 3
        with psycopg.connect(db_url) as other:  # three backends of this pool wait idle
            (count,) = other.execute(
                "SELECT count(*) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            ).fetchone() or (0,)
        assert count == 3
        assert await pool.fill() == 0  # full already
        await pool.fetch(BACKEND, {})
        assert pool.idle == 3  # the statement took one of them and gave it back
    finally:
        await pool.close()
    assert await pool.fill() == 0  # a closed pool opens nothing


class CountingPool(DirectPool):
    """A pool that counts the connections it opens."""

    opened = 0

    async def _open(self) -> psycopg.AsyncConnection[Any]:
        self.opened += 1
        return await super()._open()


async def test_fills_at_once_open_max_idle_connections_in_all(db_url: str) -> None:
    pool = CountingPool(db_url, max_open=8, max_idle=4)
    try:
        added = await asyncio.gather(*(pool.fill() for _ in range(5)))  # five first runs
        assert sum(added) == 4 and pool.idle == 4
        assert pool.opened == 4  # none opened only to be closed again
    finally:
        await pool.close()


async def test_fill_raises_nothing_when_the_server_is_unreachable() -> None:
    pool = DirectPool("postgresql://nobody@127.0.0.1:1/none?connect_timeout=2")
    assert await pool.fill() == 0
    assert pool.idle == 0
