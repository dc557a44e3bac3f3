"""One writer process of ``test_many_writers.py`` (``python -m tests.citus.writer``).

After printing ``ready`` it waits for ``go`` on stdin (the parent releases every process
at once), then at the same time:

* enqueues two turns for each of the users, as ``Mem01Session.add_items`` does: a fact
  every process states for that user, and one only this process states; its own worker
  (four processes: four workers claiming from one queue) extracts and applies them;
* applies, for each hot user, its share of ``ways`` concurrent batches (the same fact in
  every batch, and one fact of its own), straight through the engine.

It then works until no job of any process is pending or running, and prints ``done``.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Sequence
from datetime import datetime

from mem01session.db import Database
from mem01session.embeddings import HashingEmbedder
from mem01session.engine import BeliefEngine
from mem01session.engine.ops import Op, Provenance
from mem01session.extraction import Candidate, Extraction, Turn
from mem01session.queue import JobStore
from mem01session.queue.turns import TurnMessage
from mem01session.queue.worker import MemoryWorker, WorkerPolicy

DIM = 64
PREFIX = "fact: "
HOT_SHARED = "Shares one fact with every writer"


def user(n: int) -> str:
    return f"user-{n:03d}"


def hot_user(n: int) -> str:
    return f"hot-{n}"


def shared_fact(n: int) -> str:
    return f"Said by every process to user {n}"


def own_fact(n: int, proc: int) -> str:
    return f"Said by process {proc} to user {n}"


def hot_fact(proc: int, i: int) -> str:
    return f"Hot write {i} from process {proc}"


class FactExtractor:
    """Deterministic extractor: each ``fact: X`` line of the user becomes ``ADD X``."""

    name = "facts"

    async def extract(
        self, turn: Turn, candidates: Sequence[Candidate], now: datetime
    ) -> Extraction:
        return Extraction(
            ops=tuple(
                Op.add(m.text.removeprefix(PREFIX))
                for m in turn.messages
                if m.role == "user" and m.text.startswith(PREFIX)
            )
        )


async def unfinished(db: Database) -> int:
    rows = await db.direct.fetch(
        "SELECT count(*) AS n FROM memory_jobs WHERE status IN ('pending', 'running')", {}
    )
    return int(rows[0]["n"])


async def main(url: str, proc: int, procs: int, users: int, hot: int, ways: int) -> None:
    embedder = HashingEmbedder(DIM)
    db = await Database.open(url=url, embedding_model=embedder.name, embedding_dim=DIM)
    engine = BeliefEngine(db, embedder)
    store = JobStore(db)
    worker = MemoryWorker(engine, FactExtractor(), policy=WorkerPolicy(poll_interval=0.05))
    print("ready", flush=True)
    if sys.stdin.readline().strip() != "go":
        raise SystemExit("no go")
    worker.start()

    async def talk(n: int) -> None:
        for text in (shared_fact(n), own_fact(n, proc)):
            message = TurnMessage("user", PREFIX + text)
            await store.enqueue(user(n), f"p{proc}-u{n}", [message], now=engine.clock())

    async def hot_write(h: int, i: int) -> None:
        ops = [Op.add(HOT_SHARED), Op.add(hot_fact(proc, i))]
        await engine.apply(hot_user(h), ops, provenance=Provenance(extractor="hot"))

    mine = [i for i in range(ways) if i % procs == proc]
    async with asyncio.timeout(600):
        await asyncio.gather(
            *(talk(n) for n in range(users)), *(hot_write(h, i) for h in range(hot) for i in mine)
        )
        while await unfinished(db):  # this process's turns, and any other's still queued
            await worker.wait_progress(0.2)
    await worker.stop()
    await db.close()
    print("done", flush=True)


if __name__ == "__main__":
    url, *numbers = sys.argv[1:]
    asyncio.run(main(url, *(int(x) for x in numbers)))
