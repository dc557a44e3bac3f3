"""Opening the memory is paid once per process, outside the run's budget: a first run
whose memory takes longer than ``recall_wait`` to open (the local model and the tokenizer
loading, seconds on a slow machine) still recalls, and still enqueues its turn."""

from __future__ import annotations

import json
import time
from collections.abc import Callable

from agents import Agent, Runner
from agents.testing import ScriptedModel, assistant_message

from mem01session.db import Database
from mem01session.embeddings import HashingEmbedder
from mem01session.engine import BeliefEngine
from mem01session.session import Mem01Session, session_health
from mem01session.session.barrier import budget
from tests.session.conftest import MemoryFactory

RECALL_WAIT = 0.2  # of the sessions below: their runs' memory work gets budget() seconds
LOADING = 2 * budget(RECALL_WAIT)  # how long their memory's embedding model takes to load


class SlowToLoad(HashingEmbedder):
    """The test's embedder, whose model takes :data:`LOADING` seconds to load (the
    memory loads it when it opens, before the first run's memory work)."""

    def __init__(self, dim: int) -> None:
        super().__init__(dim)
        self.loads = 0

    def load(self) -> float:
        time.sleep(LOADING)  # the slow component itself, not a wait for another task
        self.loads += 1
        return LOADING


def slow_engine(db: Database, embedder: HashingEmbedder) -> BeliefEngine:
    return BeliefEngine(db, SlowToLoad(embedder.dim))  # same model name: same vectors


async def test_a_first_run_recalls_though_its_memory_took_longer_than_the_budget_to_open(
    make_session: Callable[..., Mem01Session],
    memories: MemoryFactory,
    db: Database,
    embedder: HashingEmbedder,
) -> None:
    monday = make_session("monday", "ana")
    await Runner.run(
        Agent(name="a", model=ScriptedModel([[assistant_message("Noted.")]])),
        "I live in Lisbon",
        session=monday,
        run_config=monday.run_config(),
    )
    assert await monday.flush_memory(timeout=30)

    engine = slow_engine(db, embedder)
    friday = make_session("friday", "ana", memory=memories(engine=engine), recall_wait=RECALL_WAIT)
    model = ScriptedModel([[assistant_message("Lisbon.")]])
    await Runner.run(
        Agent(name="a", model=model),
        "Where do I live?",
        session=friday,
        run_config=friday.run_config(),
    )
    assert isinstance(engine.embedder, SlowToLoad) and engine.embedder.loads == 1
    assert friday.last_memory_error is None
    assert friday.last_recall is not None
    assert "Lives in Lisbon" in json.dumps(model.calls[0].input)


async def test_a_first_turn_is_enqueued_though_its_memory_took_longer_than_the_budget_to_open(
    make_session: Callable[..., Mem01Session],
    memories: MemoryFactory,
    db: Database,
    embedder: HashingEmbedder,
) -> None:
    # No run_config: nothing recalls, the enqueue of the turn is what opens the memory.
    session = make_session(
        "c", "bo", memory=memories(engine=slow_engine(db, embedder)), recall_wait=RECALL_WAIT
    )
    await Runner.run(
        Agent(name="a", model=ScriptedModel([[assistant_message("Noted.")]])),
        "I live in Porto",
        session=session,
    )
    assert session.last_memory_error is None
    assert session_health(session).unsent_turns == 0  # enqueued, not kept for the next turn
    assert await session.flush_memory(timeout=30)
    assert [
        b.content for b in await session.memory.beliefs(session.user_id, include_inactive=True)
    ] == ["Lives in Porto"]
