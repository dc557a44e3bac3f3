"""A run never waits for the extraction of turns its model input already holds.

It still waits (at most ``recall_wait``, once per turn and conversation) for a turn the
model cannot see: another conversation's, or one a trimming inner session dropped. Meanwhile
the block says that recent turns of the conversation are newer than its records, and how
many turns elsewhere are still being processed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

from agents.memory import SQLiteSession

from mem01session import Mem01Session
from mem01session.engine import BeliefEngine
from mem01session.extraction import Candidate, Extraction, Turn
from mem01session.session.items import MemoryItem, item_text
from mem01session.shortterm import TrimmingSession
from tests.reliability.harness import say
from tests.session.conftest import Gate, MemoryFactory, ScriptedExtractor

NOTE = "Not in these notes yet"
PENDING = "Still being processed, so not in these notes"


class GatedExtractor(ScriptedExtractor):
    """The scripted city extractor, held at ``gate`` while it is closed (a slow LLM)."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = Gate()
        self.entered = Gate()

    async def extract(
        self, turn: Turn, candidates: Sequence[Candidate], now: datetime
    ) -> Extraction:
        self.entered.set()
        await self.gate.wait()
        return await super().extract(turn, candidates, now)


def block_of(model_input: Sequence[object]) -> str:
    blocks = [item_text(i) for i in model_input if isinstance(i, MemoryItem)]
    return blocks[0] if blocks else ""


async def test_monday_new_york_wednesday_moved_and_asked_at_once(
    memories: MemoryFactory, engine: BeliefEngine, tmp_path: Path
) -> None:
    extractor = GatedExtractor()
    memory = memories(extractor=extractor)
    store = tmp_path / "t.sqlite"
    monday = Mem01Session("monday", "mia", inner=SQLiteSession("monday", store), memory=memory)
    extractor.gate.set()
    await say(monday, "I live in New York City")
    assert await monday.flush_memory(timeout=30)
    extractor.gate.clear()

    wednesday = Mem01Session(
        "wednesday",
        "mia",
        inner=SQLiteSession("wednesday", store),
        memory=memory,
        recall_wait=3600,  # were the run to wait for the extraction, it would hang here
    )
    await say(wednesday, "I moved to San Francisco last weekend")
    extractor.entered.clear()
    await asyncio.wait_for(extractor.entered.wait(), 30)  # that turn is being extracted
    async with asyncio.timeout(60):  # a deadlock guard, not a timing assertion
        model = await say(wednesday, "Where do I live now?")

    seen = model.calls[0].input
    block = block_of(seen)
    assert "Lives in New York City" in block  # the record the pending turn will supersede…
    assert NOTE in block and "last turn here" in block  # …is marked as possibly older
    said = [item_text(i) for i in seen if not isinstance(i, MemoryItem)]
    assert "I moved to San Francisco last weekend" in said  # the newer truth, in view
    assert said.index("I moved to San Francisco last weekend") < said.index("Where do I live now?")
    assert wednesday.last_recall is not None and not wednesday.last_recall.stale

    extractor.gate.set()  # the worker goes on: nothing skipped, nothing twice
    assert await wednesday.flush_memory(timeout=30)
    friday = Mem01Session("friday", "mia", inner=SQLiteSession("friday", store), memory=memory)
    model = await say(friday, "Where do I live?")
    block = block_of(model.calls[0].input)
    assert "Lives in San Francisco" in block and NOTE not in block
    history = await engine.history("mia")  # the scripted extractor keeps the whole phrase
    assert [(b.content[:22], b.status) for b in history] == [
        ("Lives in New York City", "superseded"),
        ("Lives in San Francisco", "active"),
    ]


async def test_a_turn_of_another_conversation_is_waited_for_once(
    memories: MemoryFactory, tmp_path: Path
) -> None:
    """A run waits for another conversation's turn being extracted, at most recall_wait;
    when that wait runs out, the conversation's later runs do not wait for it again (a
    slow or backed-up queue does not tax every reply). The block says it is pending."""
    extractor = GatedExtractor()
    memory = memories(extractor=extractor)
    store = tmp_path / "t.sqlite"
    a = Mem01Session("a", "noa", inner=SQLiteSession("a", store), memory=memory)
    b = Mem01Session("b", "noa", inner=SQLiteSession("b", store), memory=memory, recall_wait=0.2)
    await say(a, "I live in Berlin")
    await asyncio.wait_for(extractor.entered.wait(), 30)

    model = await say(b, "Where do I live?")
    recall = b.last_recall
    assert recall is not None and recall.stale and recall.waited_ms > 0  # waited, gave up
    block = block_of(model.calls[0].input)
    assert NOTE not in block  # nothing of b's own is pending…
    assert PENDING in block and "1 recent turn" in block  # …but a turn elsewhere is

    model = await say(b, "Where do I live?")  # the same turn, still being extracted
    recall = b.last_recall
    assert recall is not None and recall.stale and recall.waited_ms == 0  # not waited again
    assert recall.pending_turns == 1 and PENDING in block_of(model.calls[0].input)

    extractor.gate.set()
    assert await b.flush_memory(timeout=30)
    model = await say(b, "Where do I live?")
    assert b.last_recall is not None and not b.last_recall.stale
    block = block_of(model.calls[0].input)
    assert "Lives in Berlin" in block and PENDING not in block


async def test_turns_a_trimming_session_dropped_are_not_visible_and_are_waited_for(
    memories: MemoryFactory, tmp_path: Path
) -> None:
    extractor = GatedExtractor()
    memory = memories(extractor=extractor)
    inner = TrimmingSession(SQLiteSession("t", tmp_path / "t.sqlite"), max_turns=1)
    session = Mem01Session("t", "tim", inner=inner, memory=memory, recall_wait=0.2)
    extractor.gate.set()
    await say(session, "I live in Oslo")
    assert await session.flush_memory(timeout=30)
    extractor.gate.clear()
    await say(session, "I moved to Bergen")  # out of view after the next turn
    await say(session, "I live in Bergen now")  # the one turn in view when the next run starts

    model = await say(session, "Where do I live?")
    assert session.last_recall is not None and session.last_recall.stale  # waited, then gave up
    block = block_of(model.calls[0].input)
    assert "Lives in Oslo" in block and "last turn here" in block  # only one is in view
    extractor.gate.set()
    assert await session.flush_memory(timeout=30)
