"""The statements of a write transaction, sent on the transaction's own psycopg connection.

SQLAlchemy opens a write transaction (a connection from its pool, ``BEGIN``, ``COMMIT`` or
``ROLLBACK``, and the connection a :data:`~.write.TransactionHook` is given); the
statements inside it go straight to the psycopg connection under it. SQLAlchemy's own work
per statement (a greenlet, the compiled-statement cache, result metadata) costs more CPU
than the statement itself: a turn's apply runs some fifteen of them, and the worker's
throughput is bound by that CPU. The SQL is written as for SQLAlchemy (``:name``
parameters, ``CAST(:x AS type)``) and converted once per text by SQLAlchemy's compiler.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from psycopg import AsyncCursor
from psycopg.rows import RowMaker
from sqlalchemy import text
from sqlalchemy.dialects.postgresql.psycopg import PGDialect_psycopg
from sqlalchemy.ext.asyncio import AsyncConnection

Row = dict[str, Any]
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
    """Statements on the connection of an open SQLAlchemy transaction (see the module)."""

    def __init__(self, conn: AsyncConnection, driver: Any) -> None:
        self.conn = conn
        self._cursor = driver.cursor(row_factory=_dicts)

    @classmethod
    async def of(cls, conn: AsyncConnection) -> Tx:
        """The transaction open on ``conn`` (which must have begun one)."""
        raw = await conn.get_raw_connection()
        return cls(conn, raw.driver_connection)

    async def rows(self, sql: str, params: Mapping[str, Any]) -> list[Row]:
        """Run ``sql`` (a query, or a statement with ``RETURNING``); its rows as dicts."""
        cursor = self._cursor
        await cursor.execute(_psycopg_sql(sql), params)
        return list(await cursor.fetchall())

    async def row(self, sql: str, params: Mapping[str, Any]) -> Row | None:
        """The first row of ``sql``, if any."""
        rows = await self.rows(sql, params)
        return rows[0] if rows else None

    async def one(self, sql: str, params: Mapping[str, Any]) -> Row:
        """The one row ``sql`` returns (an error if none)."""
        rows = await self.rows(sql, params)
        if len(rows) != 1:
            raise RuntimeError(f"expected one row, got {len(rows)}")
        return rows[0]

    async def run(self, sql: str, params: Mapping[str, Any]) -> int:
        """Run ``sql``; how many rows it touched."""
        await self._cursor.execute(_psycopg_sql(sql), params)
        return int(self._cursor.rowcount)


__all__ = ["Row", "Tx"]
