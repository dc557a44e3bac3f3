"""A conversation process that the crash tests SIGKILL at a chosen point.

argv: DB_URL TRANSCRIPT SESSION USER LINE...; env KILL_PHASE / KILL_TURN choose where it
stops. It talks through the real Runner (scripted model), the real Mem01Session, a real
SQLite transcript, the real worker and RuleExtractor, and prints one line per point passed:

    transcript N   the user item of turn N is in the transcript (add_items, before enqueue)
    enqueued N     turn N's job row is committed (add_items has not returned yet)
    accepted N     Runner.run returned: the turn is accepted
    extracting N   the worker is inside the extractor for turn N
    applying N     extraction is done, the apply transaction has not started
    committing N   inside the apply transaction, ops written, job not yet marked done
    applied N      flush_memory() saw turn N applied

At the chosen point it prints the marker and blocks forever, so the parent's SIGKILL
lands exactly there.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from agents import Agent, Runner
from agents.memory import SQLiteSession
from agents.testing import ScriptedModel, assistant_message

from mem01session import Memory
from mem01session.db import Database
from mem01session.embeddings import HashingEmbedder
from mem01session.engine import BeliefEngine
from mem01session.extraction import Candidate, Extraction, RuleExtractor, Turn
from mem01session.queue import JobStore
from mem01session.session import Mem01Session

KILL_PHASE = os.environ.get("KILL_PHASE", "")
KILL_TURN = int(os.environ.get("KILL_TURN", "-1"))
LINES: list[str] = sys.argv[5:]
CURRENT = -1  # the turn the worker is on (it processes one job at a time)


async def mark(phase: str, turn: int) -> None:
    # One write per line: the worker's thread marks too, and print() writes the text and
    # its newline apart, so two threads' lines could run together ("accepted 2extracting 2").
    os.write(sys.stdout.fileno(), f"{phase} {turn}\n".encode())
    if phase == KILL_PHASE and turn == KILL_TURN:
        await asyncio.Event().wait()  # the parent kills us here


def user_turn(texts: Sequence[str]) -> int | None:
    for t in texts:
        if t in LINES:
            return LINES.index(t)
    return None


class MarkingTranscript(SQLiteSession):
    async def add_items(self, items: list[Any]) -> None:
        await super().add_items(items)
        n = user_turn([str(i.get("content")) for i in items if i.get("role") == "user"])
        if n is not None:
            await mark("transcript", n)


_real_enqueue = JobStore.enqueue


async def marking_enqueue(self: JobStore, *args: Any, **kwargs: Any) -> int:
    job_id = await _real_enqueue(self, *args, **kwargs)
    n = user_turn([m.text for m in args[2] if m.role == "user"])
    if n is not None:
        await mark("enqueued", n)
    return job_id


JobStore.enqueue = marking_enqueue  # type: ignore[method-assign]


class MarkingExtractor:
    def __init__(self) -> None:
        self.inner = RuleExtractor()
        self.name = self.inner.name

    async def extract(
        self, turn: Turn, candidates: Sequence[Candidate], now: datetime
    ) -> Extraction:
        global CURRENT
        n = user_turn([m.text for m in turn.messages if m.role == "user"])
        CURRENT = n if n is not None else -1
        if n is not None:
            await mark("extracting", n)
        return await self.inner.extract(turn, candidates, now)


class MarkingEngine(BeliefEngine):
    async def apply_group(self, batches: Any, hook: Any = None) -> Any:
        n = CURRENT
        await mark("applying", n)

        async def marking_hook(tx: Any) -> None:
            await mark("committing", n)
            await hook(tx)

        return await super().apply_group(batches, marking_hook)


async def main() -> None:
    db_url, transcript, session_id, user_id = sys.argv[1:5]
    emb = HashingEmbedder(64)
    db = await Database.open(url=db_url, embedding_model=emb.name, embedding_dim=64)
    engine = MarkingEngine(db, emb)
    session = Mem01Session(
        session_id,
        user_id,
        inner=MarkingTranscript(session_id, transcript),
        memory=Memory(engine=engine, extractor=MarkingExtractor()),
    )
    for n, line in enumerate(LINES):
        model = ScriptedModel([[assistant_message(f"Noted: {line}")]])
        await Runner.run(
            Agent(name="a", model=model), line, session=session, run_config=session.run_config()
        )
        await mark("accepted", n)
        assert await session.flush_memory(timeout=120), "flush timed out"
        await mark("applied", n)
    assert session.last_memory_error is None, session.last_memory_error
    os.write(sys.stdout.fileno(), b"done\n")  # as mark(): one write
    await session.aclose()
    await db.close()


# Imports take seconds: the parent starts the next child early and says "go" when due.
print("ready", flush=True)
if sys.stdin.readline().strip() == "go":
    asyncio.run(main())
