"""Write throughput for ``bench.scale_out``: turns queued as jobs, drained by worker processes.

:func:`drain` enqueues ``users x turns`` turns (as ``Mem01Session.add_items`` does; not
timed), starts ``processes`` copies of this module (``python -m bench.scale_workers URL``),
releases them together through their stdin, and times until the last one exits. Each runs
one ``MemoryWorker`` with the rule extractor (no LLM: the figure is the queue, the
engine and the database) and exits once no job of anyone is pending or running.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from mem01session.db import Database
from mem01session.embeddings import HashingEmbedder
from mem01session.engine import BeliefEngine
from mem01session.extraction import RuleExtractor
from mem01session.queue import JobStore
from mem01session.queue.turns import TurnMessage
from mem01session.queue.worker import MemoryWorker, WorkerPolicy

from .synthetic import OBJECTS

ROOT = Path(__file__).resolve().parents[1]
DIM = 384


def turn(user: int, n: int) -> str:
    """A sentence the rule extractor turns into one ADD (a distinct key per turn)."""
    return f"I love {OBJECTS[(user * 7 + n) % len(OBJECTS)]}."


@dataclass(frozen=True)
class Drain:
    processes: int
    jobs: int
    seconds: float
    beliefs: int

    @property
    def jobs_per_s(self) -> float:
        return self.jobs / self.seconds


async def _enqueue(url: str, prefix: str, users: int, turns: int) -> int:
    emb = HashingEmbedder(DIM)
    db = await Database.open(url=url, embedding_model=emb.name, embedding_dim=DIM)
    try:
        store = JobStore(db)
        now = datetime.now(UTC)  # the workers' clock is the real one: due at once

        async def one(u: int) -> None:
            for n in range(turns):
                message = TurnMessage("user", turn(u, n))
                await store.enqueue(f"{prefix}-{u:05d}", f"s{u}", [message], now=now)

        await asyncio.gather(*(one(u) for u in range(users)))
        rows = await db.direct.fetch(
            "SELECT count(*) AS n FROM memory_jobs WHERE status = 'pending'", {}
        )
        return int(rows[0]["n"])
    finally:
        await db.close()


async def _count_beliefs(url: str, prefix: str) -> int:
    emb = HashingEmbedder(DIM)
    db = await Database.open(url=url, embedding_model=emb.name, embedding_dim=DIM)
    try:
        rows = await db.direct.fetch(
            "SELECT count(*) AS n FROM beliefs WHERE user_id LIKE %(p)s", {"p": prefix + "-%"}
        )
        return int(rows[0]["n"])
    finally:
        await db.close()


async def drain(url: str, *, prefix: str, users: int, turns: int, processes: int) -> Drain:
    """Queue the turns, then time ``processes`` worker processes until the queue is empty."""
    jobs = await _enqueue(url, prefix, users, turns)
    seconds = await asyncio.to_thread(_run_processes, url, processes)
    return Drain(processes, jobs, seconds, await _count_beliefs(url, prefix))


def _run_processes(url: str, processes: int) -> float:
    children = [
        subprocess.Popen(
            [sys.executable, "-m", "bench.scale_workers", url],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(processes)
    ]
    try:
        for child in children:
            assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        started = time.perf_counter()
        for child in children:
            assert child.stdin is not None
            child.stdin.write("go\n")
            child.stdin.flush()
        for child in children:
            out, _ = child.communicate(timeout=3600)
            if child.returncode != 0 or not out.strip().startswith("done"):
                raise RuntimeError(f"a worker process failed (exit {child.returncode})")
        return time.perf_counter() - started
    finally:
        for child in children:
            if child.poll() is None:
                child.kill()
                child.communicate()


async def _work(url: str) -> None:
    emb = HashingEmbedder(DIM)
    db = await Database.open(url=url, embedding_model=emb.name, embedding_dim=DIM)
    worker = MemoryWorker(BeliefEngine(db, emb), RuleExtractor(), policy=WorkerPolicy())
    print("ready", flush=True)
    if sys.stdin.readline().strip() != "go":
        raise SystemExit("no go")
    processed = 0
    while True:
        done = await worker.run_once()
        processed += done
        if done:
            continue
        left = await db.direct.fetch(
            "SELECT count(*) AS n FROM memory_jobs WHERE status IN ('pending', 'running')", {}
        )
        if not left[0]["n"]:
            break
        await asyncio.sleep(0.05)  # poll again: another process holds the last jobs
    await worker.stop()
    await db.close()
    print(f"done {processed}", flush=True)


if __name__ == "__main__":
    asyncio.run(_work(sys.argv[1]))
