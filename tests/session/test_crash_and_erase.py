"""A job whose worker process was killed is resumed once; erase beats in-flight jobs."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
from datetime import datetime, timedelta

import pytest
from sqlalchemy import text

from mem01session.db import Database
from mem01session.engine import BeliefEngine
from mem01session.queue.worker import MemoryWorker, WorkerPolicy
from tests.child_env import pythonpath
from tests.session.conftest import ScriptedExtractor

CHILD = textwrap.dedent(
    """
    import asyncio, sys
    from agents.memory import SQLiteSession
    from mem01session.db import Database
    from mem01session import Memory, Mem01Session
    from mem01session.engine import BeliefEngine
    from mem01session.embeddings import HashingEmbedder

    class Hang:
        name = "hang"
        async def extract(self, turn, candidates, now):
            print("extracting", flush=True)
            await asyncio.Event().wait()

    async def main():
        emb = HashingEmbedder(64)
        db = await Database.open(url=sys.argv[1], embedding_model=emb.name, embedding_dim=64)
        memory = Memory(engine=BeliefEngine(db, emb), extractor=Hang())
        # A generous budget: this test is about the kill, not a busy machine's first statement.
        s = Mem01Session("c", "kim", inner=SQLiteSession("c"), memory=memory, recall_wait=30)
        await s.add_items([{"role": "user", "content": "I live in Kyoto"},
                           {"role": "assistant", "content": "Noted."}])
        print("accepted", flush=True)
        await asyncio.Event().wait()

    asyncio.run(main())
    """
)


@pytest.mark.slow
async def test_killed_worker_job_is_resumed_and_applied_once(
    db_url: str, db: Database, engine: BeliefEngine
) -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, db_url],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": pythonpath(os.getcwd())},
    )
    try:
        assert child.stdout is not None
        lines = {child.stdout.readline().strip() for _ in range(2)}
        assert lines == {"accepted", "extracting"}, child.stderr.read() if child.stderr else ""
    finally:
        child.send_signal(signal.SIGKILL)
        child.communicate(timeout=30)  # reaps it and closes its pipes

    async with db.sa_engine.connect() as conn:
        status = (await conn.execute(text("SELECT status FROM memory_jobs"))).scalar_one()
    assert status == "running"  # left behind by the dead process

    def after_lease() -> datetime:
        return engine.clock() + timedelta(minutes=10)

    resumer = BeliefEngine(db, engine.embedder, clock=after_lease)
    worker = MemoryWorker(resumer, ScriptedExtractor())
    assert await worker.run_once() == 1
    assert await worker.run_once() == 0  # nothing left: applied exactly once

    beliefs = await engine.history("kim")
    assert [(b.content, b.status) for b in beliefs] == [("Lives in Kyoto", "active")]
    async with db.sa_engine.connect() as conn:
        row = (await conn.execute(text("SELECT status, attempts FROM memory_jobs"))).one()
    assert tuple(row) == ("done", 2)


async def test_erase_during_in_flight_job_leaves_nothing(
    db: Database, engine: BeliefEngine
) -> None:
    from mem01session.extraction import TurnMessage
    from mem01session.queue import JobStore

    gate = asyncio.Event()
    started = asyncio.Event()
    inner = ScriptedExtractor()

    async def gated(turn, candidates, now):  # type: ignore[no-untyped-def]
        started.set()
        await gate.wait()
        return await ScriptedExtractor.extract(inner, turn, candidates, now)

    extractor = ScriptedExtractor()
    extractor.extract = gated  # type: ignore[method-assign]
    for city in ("Quito", "Lima", "Cusco"):
        await JobStore(db).enqueue(
            "lee", "c", [TurnMessage("user", f"I live in {city}")], now=engine.clock()
        )
    worker = MemoryWorker(engine, extractor, policy=WorkerPolicy(poll_interval=0.01))
    worker.start()
    await started.wait()

    receipt = await engine.erase_user("lee")
    assert receipt.deleted["memory_jobs"] == 3
    await engine.reinstate_user("lee")
    gate.set()
    await worker.run_once()
    await worker.stop()

    async with db.sa_engine.connect() as conn:
        for table in ("beliefs", "belief_events", "belief_sources", "memory_jobs"):
            count = (
                await conn.execute(text(f"SELECT count(*) FROM {table} WHERE user_id = 'lee'"))
            ).scalar_one()
            assert count == 0, table
