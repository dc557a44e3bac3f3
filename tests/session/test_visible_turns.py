"""A run never waits for the extraction of the user's turns.

Turns its model input holds need nothing: the block says that recent turns of the
conversation are newer than its records. For a turn the model cannot see (another
conversation's, or one a trimming inner session dropped), the block quotes the user's words
in it, the newest last, and counts those it cannot quote.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

from agents.memory import SQLiteSession

from mem01session import Mem01Session
from mem01session.engine import BeliefEngine
from mem01session.engine.frame import CLOSE, PENDING_HEADER
from mem01session.extraction import Candidate, Extraction, Turn
from mem01session.session.items import MemoryItem, item_text, memory_texts
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
    blocks = memory_texts(model_input)
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


async def test_a_turn_said_elsewhere_a_moment_ago_is_quoted_not_waited_for(
    memories: MemoryFactory, tmp_path: Path
) -> None:
    """Another conversation's turns still being extracted: the run does not wait (were it
    to, it would hang here), its block closes with the user's words in the newest three,
    in the order said, and counts the one more it does not quote."""
    extractor = GatedExtractor()
    memory = memories(extractor=extractor)
    store = tmp_path / "t.sqlite"
    a = Mem01Session("a", "noa", inner=SQLiteSession("a", store), memory=memory)
    b = Mem01Session("b", "noa", inner=SQLiteSession("b", store), memory=memory, recall_wait=3600)
    await say(a, "I live in Berlin")
    await asyncio.wait_for(extractor.entered.wait(), 30)  # held in extraction
    async with asyncio.timeout(60):  # a deadlock guard, not a timing assertion
        model = await say(b, "Where do I live?")
    recall = b.last_recall
    assert recall is not None and recall.waited_ms == 0 and not recall.stale
    assert (recall.pending_turns, recall.pending_quoted) == (1, 1)
    block = block_of(model.calls[0].input)
    assert NOTE not in block and PENDING not in block  # nothing unsaid…
    assert block.endswith(f'{PENDING_HEADER}- "I live in Berlin"\n{CLOSE}')  # …it is quoted

    for said in ("I work as a nurse", "I have a dog named Rex", "I moved to Munich"):
        await say(a, said)
    async with asyncio.timeout(60):
        model = await say(b, "Where do I live?")
    recall = b.last_recall
    assert recall is not None and recall.stale and recall.waited_ms == 0
    assert (recall.pending_turns, recall.pending_quoted) == (4, 3)
    block = block_of(model.calls[0].input)
    assert PENDING in block and "1 more recent turn" in block
    assert block.endswith(
        f'{PENDING_HEADER}- "I work as a nurse"\n- "I have a dog named Rex"\n'
        f'- "I moved to Munich"\n{CLOSE}'
    )

    extractor.gate.set()
    assert await b.flush_memory(timeout=30)
    model = await say(b, "Where do I live?")
    assert b.last_recall is not None and not b.last_recall.stale
    block = block_of(model.calls[0].input)
    assert "Lives in Munich" in block and PENDING_HEADER not in block


async def test_turns_a_trimming_session_dropped_are_quoted(
    memories: MemoryFactory, tmp_path: Path
) -> None:
    extractor = GatedExtractor()
    memory = memories(extractor=extractor)
    inner = TrimmingSession(SQLiteSession("t", tmp_path / "t.sqlite"), max_turns=1)
    session = Mem01Session("t", "tim", inner=inner, memory=memory, recall_wait=3600)
    extractor.gate.set()
    await say(session, "I live in Oslo")
    assert await session.flush_memory(timeout=30)
    extractor.gate.clear()
    await say(session, "I moved to Bergen")  # out of view after the next turn
    await say(session, "I live in Bergen now")  # the one turn in view when the next run starts

    async with asyncio.timeout(60):
        model = await say(session, "Where do I live?")
    recall = session.last_recall
    assert recall is not None and not recall.stale and recall.pending_quoted == 1
    block = block_of(model.calls[0].input)
    assert "Lives in Oslo" in block and "last turn here" in block  # only one is in view
    assert block.endswith(f'{PENDING_HEADER}- "I moved to Bergen"\n{CLOSE}')  # the other
    extractor.gate.set()
    assert await session.flush_memory(timeout=30)
