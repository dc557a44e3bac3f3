"""The statements of a write transaction, sent on the transaction's own psycopg connection.

A write transaction runs on a connection of the database's direct pool
(:func:`transaction`) or, for a caller's hook that wants SQLAlchemy, in a SQLAlchemy
transaction (:meth:`Tx.of`); either way the statements go straight to the psycopg
connection. SQLAlchemy's own work per statement (a greenlet, the compiled-statement cache,
result metadata) costs more CPU than the statement itself, and a turn's apply runs some
fifteen of them: the worker's throughput is bound by that CPU. The SQL is written as for
SQLAlchemy (``:name`` parameters, ``CAST(:x AS type)``) and converted once per text by
SQLAlchemy's compiler.

**Pipelined.** On the direct pool, the transaction runs in psycopg's pipeline mode: a
statement whose result nobody reads (:meth:`Tx.run`: a ledger row, a provenance row, word
counts) is sent without waiting for the server, and goes with the next statement whose
rows are read (:meth:`Tx.rows`) or with the ``COMMIT``. A turn's apply so costs a few round
trips instead of one per statement. An error in a statement sent so is raised by the next
read (or by the commit) and rolls the whole transaction back, as before.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

import psycopg
from psycopg import AsyncCursor
from psycopg.pq import TransactionStatus
from psycopg.rows import RowMaker
from sqlalchemy import text
from sqlalchemy.dialects.postgresql.psycopg import PGDialect_psycopg
from sqlalchemy.ext.asyncio import AsyncConnection

if TYPE_CHECKING:
    from ..db.direct import DirectPool

Row = dict[str, Any]
T = TypeVar("T")
_DIALECT = PGDialect_psycopg()  # type: ignore[no-untyped-call]


@functools.lru_cache(maxsize=512)
def _psycopg_sql(sql: str) -> str:
    """``sql`` with its ``:name`` parameters as psycopg's ``%(name)s`` (``%`` escaped)."""
    return str(text(sql).compile(dialect=_DIALECT))


def _dicts(cursor: AsyncCursor[Any]) -> RowMaker[Row]:
    """Rows as dicts, their keys read from the result itself (psycopg's ``dict_row`` builds
    the cursor's whole ``description`` per statement, a tenth of a write's CPU)."""
    result = cursor.pgresult
    names = []
    for i in range(result.nfields if result is not None else 0):
        name = result.fname(i) if result is not None else None
        names.append(name.decode() if name is not None else f"column{i}")

    def make(values: Any) -> Row:
        return dict(zip(names, values, strict=True))

    return make


class Tx:
    """Statements on the connection of an open transaction (see the module)."""

    def __init__(self, driver: psycopg.AsyncConnection[Any]) -> None:
        self.driver = driver
        self._reader = driver.cursor(row_factory=_dicts)
        # Statements nobody reads the result of share a cursor of their own: in pipeline
        # mode their results arrive later, and must not land on the reader's.
        self._sink = driver.cursor()
        self.reads = 0  # statements whose rows were read (round trips, when pipelined)

    @classmethod
    async def of(cls, conn: AsyncConnection) -> Tx:
        """The transaction open on SQLAlchemy's ``conn`` (which must have begun one)."""
        raw = await conn.get_raw_connection()
        driver = raw.driver_connection
        assert driver is not None  # a connection in use has one
        return cls(driver)

    async def rows(self, sql: str, params: Mapping[str, Any]) -> list[Row]:
        """Run ``sql`` (a query, or a statement with ``RETURNING``); its rows as dicts."""
        cursor = self._reader
        await cursor.execute(_psycopg_sql(sql), params)
        found = list(await cursor.fetchall())
        self.reads += 1
        return found

    async def row(self, sql: str, params: Mapping[str, Any]) -> Row | None:
        """The first row of ``sql``, if any."""
        rows = await self.rows(sql, params)
        return rows[0] if rows else None

    async def one(self, sql: str, params: Mapping[str, Any]) -> Row:
        """The one row ``sql`` returns (an error if none)."""
        return _only(await self.rows(sql, params))

    async def run(self, sql: str, params: Mapping[str, Any]) -> None:
        """Run ``sql``, its result unread (pipelined: sent now, checked by the next read or
        the commit)."""
        await self._sink.execute(_psycopg_sql(sql), params)

    async def command(self, sql: bytes) -> None:
        """A statement without parameters, never prepared (``BEGIN``, ``COMMIT``), its
        result unread."""
        await self._sink.execute(sql, prepare=False)

    async def later(self, sql: str, params: Mapping[str, Any]) -> Pending:
        """Send ``sql`` now (pipelined: without waiting); read its rows later, from the
        returned :class:`Pending` (by then they came back with other statements')."""
        cursor = self.driver.cursor(row_factory=_dicts)
        await cursor.execute(_psycopg_sql(sql), params)
        return Pending(self, cursor)


class Pending:
    """A statement sent by :meth:`Tx.later`, whose rows are read when needed."""

    def __init__(self, tx: Tx, cursor: AsyncCursor[Row]) -> None:
        self._tx = tx
        self._cursor = cursor

    async def rows(self) -> list[Row]:
        found = list(await self._cursor.fetchall())
        self._tx.reads += 1
        return found

    async def one(self) -> Row:
        return _only(await self.rows())


def _only(rows: list[Row]) -> Row:
    if len(rows) != 1:
        raise RuntimeError(f"expected one row, got {len(rows)}")
    return rows[0]


async def transaction(pool: DirectPool, body: Callable[[Tx], Awaitable[T]]) -> T:
    """Run ``body`` in one transaction on a connection of ``pool``, pipelined (see the
    module); commit when it returns, roll back when it raises.

    A connection that sat idle in the pool and turns out broken before anything came back
    from the server (the server restarted meanwhile) costs nothing: ``body`` runs once more
    on a new connection (nothing of the first try can have been committed: its ``COMMIT``
    was never sent). A connection lost later fails the transaction, as any error does.
    """
    fresh = False
    while True:
        async with pool.leased(fresh=fresh) as (driver, reused):
            tx = Tx(driver)
            committing = False
            try:
                async with driver.pipeline():
                    await tx.command(b"BEGIN")
                    result = await body(tx)
                    committing = True
                    await tx.command(b"COMMIT")
                return result
            except psycopg.OperationalError:
                if reused and driver.broken and tx.reads == 0 and not committing:
                    fresh = True
                    continue
                await _roll_back(driver)
                raise
            except BaseException:
                await _roll_back(driver)
                raise


async def _roll_back(driver: psycopg.AsyncConnection[Any]) -> None:
    """End a failed transaction; a connection that cannot is closed (the server then rolls
    back), so that the pool never hands out one with a transaction open."""
    if driver.closed or driver.broken:
        return
    try:
        if driver.info.transaction_status != TransactionStatus.IDLE:
            await driver.execute(b"ROLLBACK", prepare=False)
    except Exception:  # the caller's error stands; the pool will not take this one back
        await driver.close()


__all__ = ["Pending", "Row", "Tx", "transaction"]
