"""A run leaves no reference cycles behind: what it made is freed when it ends, by
reference counting. Cycles are left for the garbage collector, whose collections stop
every conversation of the process (and a process with many conversations makes many)."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Callable, Iterator

import pytest
from agents import Agent, Runner
from agents.testing import ScriptedModel, assistant_message

from mem01session.engine import BeliefEngine
from mem01session.session import Mem01Session
from tests.session.test_injection import remember


@pytest.fixture
def collector_off() -> Iterator[None]:
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()


def cycles_made_by_runs() -> list[str]:
    """The types of the objects only cycles kept alive, from this library, the SDK or
    asyncio (what the test's own machinery leaves is not the runs')."""
    gc.set_debug(gc.DEBUG_SAVEALL)
    gc.collect()
    found = [type(o) for o in gc.garbage]
    gc.garbage.clear()
    gc.set_debug(0)
    ours = ("mem01session", "agents", "asyncio", "_asyncio")
    return sorted(
        {f"{t.__module__}.{t.__qualname__}" for t in found if t.__module__.startswith(ours)}
    )


async def test_runs_with_memory_leave_no_cycles(
    make_session: Callable[..., Mem01Session], engine: BeliefEngine, collector_off: None
) -> None:
    await remember(engine, "user-1", "Lives in San Francisco", "Rent is $2,400")
    session = make_session("conv-a")
    for said in ("Where do I live?", "And my rent?", "Thanks."):
        agent = Agent(name="a", model=ScriptedModel([[assistant_message("Noted.")]]))
        await Runner.run(agent, said, session=session, run_config=session.run_config())
    assert session.last_recall is not None and session.last_recall.beliefs
    assert await session.flush_memory(timeout=30)

    assert cycles_made_by_runs() == []


async def test_a_session_let_go_of_after_its_runs_is_freed_at_once(
    make_session: Callable[..., Mem01Session], collector_off: None
) -> None:
    """A server makes a session per conversation and lets it go: freed by reference
    counting (its durable tier then hands its jobs to the memory), not by a collection."""
    session = make_session("conv-b")
    for said in ("I live in Lisbon.", "Where do I live?"):
        agent = Agent(name="a", model=ScriptedModel([[assistant_message("Noted.")]]))
        config = session.run_config()
        await Runner.run(agent, said, session=session, run_config=config)
    gone = weakref.ref(session)
    del session, config, agent
    assert gone() is None
