"""The extractor always sees the user's keyed beliefs, however many others there are."""

from __future__ import annotations

from mem01session.engine import BeliefEngine
from mem01session.engine.ops import Op, Provenance
from mem01session.extraction import RuleExtractor, TurnMessage
from mem01session.queue import JobStore
from mem01session.queue.worker import MemoryWorker, WorkerPolicy

_ADJ = ["quiet", "loud", "early", "late", "long", "short", "slow", "fast"]
_ACT = [
    "hiking",
    "chess",
    "baking",
    "rowing",
    "poetry",
    "karaoke",
    "pottery",
    "surfing",
    "tango",
    "origami",
]
_WHEN = ["mondays", "fridays", "holidays", "evenings"]
# Distinct statements (numbered variants would be suppressed as near-duplicates).
HOBBIES = [(a, b, c) for a in _ADJ for b in _ACT for c in _WHEN][::4][:80]


async def move_among_many(engine: BeliefEngine, worker: MemoryWorker, user: str) -> list[str]:
    async def say(text: str) -> None:
        await JobStore(engine.db).enqueue(
            user, "c", [TurnMessage("user", text)], now=engine.clock()
        )
        assert await worker.run_once() == 1

    await say("I live in New York City.")
    await engine.apply(
        user,
        [Op.add(f"Enjoys {a} {b} on {c}") for a, b, c in HOBBIES],
        provenance=Provenance(session_id="seed"),
    )
    await say("I moved to San Francisco.")
    homes = [b for b in await engine.history(user, limit=500) if b.key == "home.city"]
    return [f"{b.content}: {b.status}" for b in homes]


async def test_a_move_supersedes_the_old_city_among_many_beliefs(engine: BeliefEngine) -> None:
    worker = MemoryWorker(engine, RuleExtractor())
    assert await move_among_many(engine, worker, "many") == [
        "Lives in New York City: superseded",
        "Lives in San Francisco: active",
    ]


async def test_search_alone_would_miss_it(engine: BeliefEngine) -> None:
    """The reason keyed candidates exist: without them the old city is not shown."""
    worker = MemoryWorker(engine, RuleExtractor(), policy=WorkerPolicy(keyed=0))
    result = await move_among_many(engine, worker, "many-search-only")
    assert "Lives in New York City: active" in result
