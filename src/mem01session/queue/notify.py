"""Waking a worker of another process when a turn is queued (PostgreSQL LISTEN/NOTIFY).

A process that records turns but runs no worker (``Memory(run_worker=False)``) sends a
notification on :data:`CHANNEL` with each enqueue (the enqueue's own statement, on one
server); a worker started with
``WorkerPolicy(listen=True)`` (``mem01session worker`` does) keeps one connection listening
and claims at once instead of at its next poll. The notification carries nothing: it only
says "look". Lost ones cost nothing but the poll interval (the worker polls anyway), so
a failure to send or to listen is logged once and never fails a run. Behind a PgBouncer in
transaction mode LISTEN receives nothing: the worker then finds turns by polling.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import psycopg

from ..logs import describe, get_logger

log = get_logger(__name__)

CHANNEL = "mem01_jobs"
NOTIFY = f"SELECT pg_notify('{CHANNEL}', '')"
RETRY_SECONDS = 5.0


async def listen(url: str, wake: Callable[[], None], *, retry: float = RETRY_SECONDS) -> None:
    """Call ``wake`` for every notification on :data:`CHANNEL` until cancelled; on a lost
    connection, connect again after ``retry`` seconds (and wake once: notifications sent
    meanwhile were missed)."""
    failures = 0
    while True:
        try:
            async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
                await conn.execute(f"LISTEN {CHANNEL}")
                if failures:
                    log.info("listening for queued turns again")
                failures = 0
                wake()
                async for _ in conn.notifies():
                    wake()
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            if not failures:  # once per outage; polling goes on meanwhile
                log.warning(
                    "not listening for queued turns (%s); finding them by polling until "
                    "the connection is back",
                    describe(exc),
                )
            failures += 1
        await asyncio.sleep(retry)


__all__ = ["CHANNEL", "NOTIFY", "listen"]
