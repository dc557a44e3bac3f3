"""The load benchmark counts the PostgreSQL server's CPU time: the backends serving now and
those that ended with their connection."""

from __future__ import annotations

import os

import psutil
import psycopg
from bench.load_processes import server_cpu_s, server_pid

WORK = "SELECT sum(i) FROM generate_series(1, 2000000) AS i"  # some CPU in the backend
TICK = 1.0 / os.sysconf("SC_CLK_TCK")  # the kernel counts CPU time in these


def ticks(seconds: float) -> int:
    """CPU seconds as the kernel's clock ticks: sums of such floats differ in the last
    bits (7.96 - 7.69 < 0.27), ticks do not."""
    return round(seconds / TICK)


def test_a_backends_time_counts_while_it_serves_and_after_it_ended(empty_db_url: str) -> None:
    main = server_pid(empty_db_url)
    assert main is not None  # the test server runs on this machine
    before = server_cpu_s(main)
    with psycopg.connect(empty_db_url, autocommit=True) as conn:
        row = conn.execute("SELECT pg_backend_pid()").fetchone()
        assert row is not None
        backend = psutil.Process(int(row[0]))
        conn.execute(WORK)
        spent = backend.cpu_times()
        own = spent.user + spent.system
        serving = server_cpu_s(main)
    assert ticks(serving - before) >= ticks(own) > 0
    # Ended: its time moves to the server's children time once the server reaps it.
    backend.wait(timeout=30)  # gone, not only exited (not our child: psutil polls)
    assert ticks(server_cpu_s(main)) >= ticks(serving)
