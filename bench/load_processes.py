"""The processes beside the runs of ``python -m bench load``: a ``mem01session worker``
process, the CPU time of a process tree, and the PostgreSQL server's."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys

import psutil
import psycopg

from mem01session.embeddings import Embedder

from .common import scratch

EMBEDDING_PROCESS = "mem01session.embeddings.minilm.child"
WORKER_NICE = 10
"""The worker process's niceness: ``nice -n 10 mem01session worker``, as the README tells
an application whose worker process shares the machine with its runs."""


def start_worker(url: str, embedder: Embedder) -> subprocess.Popen[str]:
    """``nice -n 10 mem01session worker`` on ``url``, extracting with the rule extractor
    and embedding with ``embedder``'s model, once it says it runs."""
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "DATABASE_URL")}
    env.update(
        MEM01_DATABASE_URL=url,
        MEM01_EMBEDDING_MODEL=embedder.name,
        MEM01_HOME=scratch("mem01-load-worker-"),
    )
    proc = subprocess.Popen(
        ["nice", "-n", str(WORKER_NICE), sys.executable, "-m", "mem01session", "worker"],
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line.startswith("worker "):
        proc.kill()
        raise RuntimeError(f"mem01session worker did not start: {line!r}")
    return proc


def tree_cpu_s(pid: int) -> float:
    """CPU seconds of process ``pid`` and of the processes it started (alive now)."""
    try:
        root = psutil.Process(pid)
        tree = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return 0.0
    total = 0.0
    for proc in tree:
        with contextlib.suppress(psutil.NoSuchProcess):
            times = proc.cpu_times()
            total += times.user + times.system
    return total


def helpers_cpu_s() -> float:
    """CPU seconds of this process's embedding process (the busy processes and the worker
    process are children too, and not counted)."""
    total = 0.0
    for child in psutil.Process().children():
        with contextlib.suppress(psutil.NoSuchProcess):
            if EMBEDDING_PROCESS in child.cmdline():
                total += tree_cpu_s(child.pid)
    return total


def server_pid(url: str) -> int | None:
    """The PostgreSQL server's main process (the postmaster) behind ``url``, if it runs on
    this machine (the parent of the backend serving this connection)."""
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute("SELECT pg_backend_pid()").fetchone()
        try:  # while the connection lives: its backend ends with it
            return psutil.Process(int(row[0])).ppid() if row is not None else None
        except psutil.Error:
            return None


def server_cpu_s(pid: int) -> float:
    """CPU seconds of the server: its main process, the processes it runs now (backends,
    checkpointer, WAL writer, autovacuum...) and those that ended (a backend ends with its
    connection; its time is then its parent's children time)."""
    try:
        main = psutil.Process(pid)
        times = main.cpu_times()
        children = main.children()
    except psutil.NoSuchProcess:
        return 0.0
    total = float(times.user + times.system + times.children_user + times.children_system)
    for child in children:
        with contextlib.suppress(psutil.NoSuchProcess):
            spent = child.cpu_times()
            total += spent.user + spent.system
    return total


def stop_worker(proc: subprocess.Popen[str]) -> None:
    """Stop the worker process (SIGTERM: it hands back what it holds)."""
    proc.terminate()
    try:
        proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
