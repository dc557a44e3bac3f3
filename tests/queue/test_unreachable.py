"""Which failures are the database's outage (an attempt not counted) and which are a
statement failing on a working connection (counted): real errors from a real server."""

from __future__ import annotations

import asyncio
import socket

import psycopg
import pytest
from sqlalchemy import text

from mem01session.db import Database
from mem01session.errors import DatabaseError, ExtractionError, database_unreachable

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def connect(url: str) -> psycopg.AsyncConnection[tuple[object, ...]]:
    return await psycopg.AsyncConnection.connect(url, autocommit=True)


async def raised(url: str, *statements: str) -> BaseException:
    """What the last of ``statements`` raises on a fresh connection."""
    async with await connect(url) as conn:
        for statement in statements[:-1]:
            await conn.execute(statement.encode())
        with pytest.raises(psycopg.Error) as info:
            await conn.execute(statements[-1].encode())
    return info.value


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_a_refused_or_lost_connection_is_an_outage(module_db_url: str) -> None:
    with pytest.raises(psycopg.OperationalError) as refused:
        await connect(f"postgresql://nobody@127.0.0.1:{closed_port()}/x?connect_timeout=5")
    assert database_unreachable(refused.value)
    try:
        raise DatabaseError("memory is unavailable") from refused.value
    except DatabaseError as wrapped:
        assert database_unreachable(wrapped)

    async with await connect(module_db_url) as killer, await connect(module_db_url) as victim:
        await killer.execute(b"SELECT pg_terminate_backend(%s)", [victim.info.backend_pid])
        with pytest.raises(psycopg.OperationalError) as lost:
            await victim.execute(b"SELECT 1")
    assert database_unreachable(lost.value)


async def test_a_statement_failing_on_a_working_connection_is_not(module_db_url: str) -> None:
    timeout = await raised(module_db_url, "SET statement_timeout = 20", "SELECT pg_sleep(5)")
    assert isinstance(timeout, psycopg.OperationalError)  # psycopg's class, yet not an outage
    assert not database_unreachable(timeout)
    assert not database_unreachable(await raised(module_db_url, "SELECT 1/0"))
    key = 0x6D656D3031
    async with await connect(module_db_url) as holder:
        await holder.execute(b"SELECT pg_advisory_lock(%s)", [key])
        locked = await raised(
            module_db_url, "SET lock_timeout = 20", f"SELECT pg_advisory_lock({key})"
        )
    assert isinstance(locked, psycopg.OperationalError)
    assert not database_unreachable(locked)
    duplicate = await raised(
        module_db_url,
        "CREATE TEMP TABLE once (k int PRIMARY KEY)",
        "INSERT INTO once VALUES (1)",
        "INSERT INTO once VALUES (1)",
    )
    assert not database_unreachable(duplicate)


async def test_sqlalchemys_wrapped_errors_are_told_apart(
    module_db: Database, module_db_url: str
) -> None:
    async with module_db.sa_engine.connect() as conn:
        pid = (await conn.execute(text("SELECT pg_backend_pid()"))).scalar_one()
        async with await connect(module_db_url) as killer:
            await killer.execute(b"SELECT pg_terminate_backend(%s)", [pid])
        with pytest.raises(Exception) as lost:
            await conn.execute(text("SELECT 1"))
    assert database_unreachable(lost.value)
    async with module_db.sa_engine.connect() as conn:
        await conn.execute(text("SET statement_timeout = 20"))
        with pytest.raises(Exception) as timeout:
            await conn.execute(text("SELECT pg_sleep(5)"))
        await conn.rollback()
    assert not database_unreachable(timeout.value)


async def test_failures_elsewhere_are_not_the_databases() -> None:
    for exc in (
        TimeoutError("the extraction did not finish"),
        ConnectionRefusedError("the model server is down"),
        ExtractionError("503", retryable=True),
        asyncio.CancelledError(),
    ):
        assert not database_unreachable(exc)
