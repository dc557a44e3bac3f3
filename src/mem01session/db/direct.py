"""Single statements on plain psycopg connections: the per-run path (and, leased for a
while, the write transactions: :meth:`DirectPool.leased`, :func:`~..engine.tx.transaction`).

Every run of a ``Mem01Session`` executes two statements: the recall (which is also the
barrier's probe) and the enqueue of the turn (is the user erased? the insert; three on
Citus). Through
SQLAlchemy's async layer each one costs about 0.2 ms more CPU (a greenlet per checkout,
result metadata rebuilt per execution) than the statement itself; here a statement is one
psycopg ``execute`` on an idle autocommit connection.

Connecting fails fast, as SQLAlchemy's pool does: during an outage a run learns at once
that memory is unavailable instead of waiting for a pool to grow. A statement whose
reused connection turns out to be broken (the server restarted, or closed it, since it
was last used) is retried once on a new connection, so a restart costs no run its
memory; every statement sent here is safe to repeat (reads, an insert with an
idempotency key, and the job claim, which never leases a job twice).

One pool serves every event loop of the process (the caller's, whichever it is, and the
memory's own): an idle connection waits on no loop, so any loop may take it; what is
bound to a loop, the limit on connections open at once, is kept per loop.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any, LiteralString, TypeVar

import psycopg
from psycopg.adapt import Dumper
from psycopg.pq import ExecStatus, TransactionStatus
from psycopg.rows import AsyncRowFactory, dict_row, tuple_row
from psycopg.types import TypeInfo

from ..secrets.redaction import redact_dsn
from .vectors import BinaryVector, binary_dumpers

Row = dict[str, Any]
T = TypeVar("T")


class DirectPool:
    """Autocommit psycopg connections, at most ``max_open`` at once per event loop (callers
    beyond that wait); up to ``max_idle`` are kept for reuse, by any loop."""

    def __init__(
        self,
        url: str,
        *,
        max_open: int = 15,
        max_idle: int = 5,
        on_connect_error: Callable[[], Awaitable[bool]] | None = None,
    ) -> None:
        if max_open < 1 or max_idle < 0:
            raise ValueError("max_open must be >= 1 and max_idle >= 0")
        self._url = url
        self._on_connect_error = on_connect_error
        self._max_idle = max_idle
        self._max_open = max_open
        self._idle: deque[psycopg.AsyncConnection[Row]] = deque()
        self._slots: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore]
        self._slots = weakref.WeakKeyDictionary()
        self._closed = False
        self._filling = 0  # connections fill() is opening
        self._filling_lock = threading.Lock()
        # pgvector's type, looked up on the first connection that finds it: later ones
        # learn it without a round trip.
        self._vector_dumpers: list[tuple[type, type[Dumper]]] | None = None
        self._generic_plans: bool | None = None  # found out at the first connection

    def __repr__(self) -> str:
        return f"DirectPool(url={redact_dsn(self._url)!r}, idle={len(self._idle)})"

    async def fetch(
        self, query: LiteralString, params: Mapping[str, Any], *, binary: bool = False
    ) -> list[Row]:
        """Run one statement in its own implicit transaction; its rows as dicts. With
        ``binary``, values come in PostgreSQL's binary form (cheaper to load: numbers,
        timestamps and arrays are not parsed from text; ``bytea`` arrives raw)."""
        _, rows = await self._execute(query, params, binary, dict_row)
        return rows

    async def fetch_tuples(
        self, query: LiteralString, params: Mapping[str, Any], *, binary: bool = False
    ) -> tuple[list[str], list[tuple[Any, ...]]]:
        """:meth:`fetch`, the rows as tuples (cheaper for many rows) after their column
        names."""
        return await self._execute(query, params, binary, tuple_row)

    async def _execute(
        self,
        query: LiteralString,
        params: Mapping[str, Any],
        binary: bool,
        rows: AsyncRowFactory[T],
    ) -> tuple[list[str], list[T]]:
        async with self._slots_here():
            conn, reused = await self._acquire()
            try:
                try:
                    return await _run(conn, query, params, binary, rows)
                except psycopg.OperationalError:
                    if not (reused and conn.broken):  # e.g. a statement timeout: not stale
                        raise
                    conn = await self._connect()  # it went stale while idle: one fresh try
                    return await _run(conn, query, params, binary, rows)
            finally:
                await self._release(conn)

    @asynccontextmanager
    async def leased(
        self, *, fresh: bool = False
    ) -> AsyncIterator[tuple[psycopg.AsyncConnection[Row], bool]]:
        """A connection for several statements (a transaction: :func:`~..engine.tx.
        transaction`), and whether it was reused (it sat idle here, and may have gone
        stale); with ``fresh``, a new one. It comes back to the pool when the block ends, if
        no transaction is left open on it."""
        async with self._slots_here():
            conn, reused = (await self._connect(), False) if fresh else await self._acquire()
            try:
                yield conn, reused
            finally:
                await self._release(conn)

    @property
    def idle(self) -> int:
        """Connections waiting idle for the next statement."""
        return len(self._idle)

    async def fill(self) -> int:
        """Open connections, all at once, until ``max_idle`` wait idle; how many it added.
        A start-up step, so that a burst of runs finds them ready: opened one by one as
        the first runs asked, each connect on a busy machine held up the runs waiting on
        it (they were the slowest of ``python -m bench load``'s loaded rows). A connection
        that fails to open is left for a later statement to try: this raises nothing."""
        # Sessions' first runs call it at once (Memory.ready), from any loop or thread: the
        # connections other calls are opening count as idle already.
        with self._filling_lock:
            wanted = 0 if self._closed else self._max_idle - len(self._idle) - self._filling
            if wanted <= 0:
                return 0
            self._filling += wanted
        try:
            opened = await asyncio.gather(
                *(self._open() for _ in range(wanted)), return_exceptions=True
            )
        finally:
            with self._filling_lock:
                self._filling -= wanted
        kept = 0
        for conn in opened:
            if isinstance(conn, psycopg.AsyncConnection):
                await self._release(conn)
                kept += not conn.closed
        return kept

    async def close(self) -> None:
        """Close the idle connections; connections in use close when they come back."""
        self._closed = True
        while self._idle:
            try:
                conn = self._idle.popleft()
            except IndexError:  # another thread took the last one
                break
            await conn.close()

    def _slots_here(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        slots = self._slots.get(loop)
        if slots is None:
            slots = self._slots.setdefault(loop, asyncio.Semaphore(self._max_open))
        return slots

    @property
    def distributed(self) -> bool | None:
        """Whether the server is a Citus cluster (None before the first connection)."""
        return None if self._generic_plans is None else not self._generic_plans

    async def _acquire(self) -> tuple[psycopg.AsyncConnection[Row], bool]:
        if self._closed:
            raise RuntimeError("the database handle is closed")
        while True:
            try:
                conn = self._idle.pop()  # the most recently used: the least likely to be stale
            except IndexError:
                return await self._connect(), False
            if not conn.closed:
                return conn, True

    async def _connect(self) -> psycopg.AsyncConnection[Row]:
        try:
            return await self._open()
        except psycopg.OperationalError:
            # ``on_connect_error`` may bring the server back (an embedded one that stopped):
            # then one more try, else the failure stands.
            if self._on_connect_error is None or not await self._on_connect_error():
                raise
            return await self._open()

    async def _open(self) -> psycopg.AsyncConnection[Row]:
        conn = await psycopg.AsyncConnection.connect(
            self._url, autocommit=True, row_factory=dict_row, prepare_threshold=0
        )
        # Every statement sent here is sent again and again (the per-run path, the worker's
        # transactions): it is prepared at its first execution, and planned once per
        # connection, with the generic plan the server settles on after five executions
        # anyway (planning the recall's statement takes longer than running it). Not on
        # Citus: it plans a distributed statement for its parameters' values (the user's
        # shard), and refuses a generic plan of some.
        if self._generic_plans is None:
            cur = await conn.execute(
                b"SELECT NOT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus') AS ok",
                prepare=False,
            )
            found = await cur.fetchone()
            self._generic_plans = bool(found and found["ok"])
        if self._generic_plans:
            await conn.execute(b"SET plan_cache_mode = force_generic_plan", prepare=False)
        # Recall reads a user with many episodes through the HNSW index, filtered by user:
        # the walk goes on past ef_search until the statement's LIMIT is met (pgvector's
        # iterative scans; see vector_index.py).
        await conn.execute(_HNSW_SETTINGS, prepare=False)
        if self._vector_dumpers is None:
            info = await TypeInfo.fetch(conn, "vector")
            if info is not None:  # None before the extension is created
                self._vector_dumpers = binary_dumpers(info.oid, info.array_oid)
        for kind, dumper in self._vector_dumpers or ():
            conn.adapters.register_dumper(kind, dumper)
        return conn

    async def _release(self, conn: psycopg.AsyncConnection[Row]) -> None:
        if conn.closed:
            return
        # A statement interrupted mid-flight leaves the connection busy: never reuse it.
        healthy = conn.info.transaction_status == TransactionStatus.IDLE
        if healthy and not self._closed and len(self._idle) < self._max_idle:
            self._idle.append(conn)
        else:
            await conn.close()


async def _run(
    conn: psycopg.AsyncConnection[Row],
    query: LiteralString,
    params: Mapping[str, Any],
    binary: bool,
    rows: AsyncRowFactory[T],
) -> tuple[list[str], list[T]]:
    cur = conn.cursor(row_factory=rows)
    await cur.execute(query, params, binary=binary)
    # The names from the result itself: ``cur.description`` builds a Column object, type
    # lookups included, for every column of every statement.
    result = cur.pgresult
    if result is None or result.status not in _ROWS:
        return [], []
    names = [(result.fname(i) or b"").decode() for i in range(result.nfields)]
    return names, await cur.fetchall()


_ROWS = (ExecStatus.TUPLES_OK, ExecStatus.SINGLE_TUPLE)
HNSW_EF_SEARCH = 100
_HNSW_SETTINGS = (
    b"SELECT set_config('hnsw.iterative_scan', 'relaxed_order', false), "
    b"set_config('hnsw.ef_search', '" + str(HNSW_EF_SEARCH).encode() + b"', false)"
)


__all__ = ["BinaryVector", "DirectPool", "Row"]
