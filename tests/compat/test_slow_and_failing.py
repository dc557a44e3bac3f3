"""A slow server and a failing extraction (issue 25), on the strictest fake server.

* Slow: ``MEM01_LLM_TIMEOUT`` is the one bound of an extraction: the worker's as well as
  each request's. Here the server takes longer than the setting (set small, as a CPU-only
  server takes longer than 60 s), and the extraction fails naming it; raised above the
  server's delay, the same server's extraction is applied.
* Failing: a turn whose answer is cut off at the token limit fails every time. It is tried
  ``max_attempts`` times, then parked (failed, its words kept as an episode, listed among
  failed jobs), and the user's later turns are applied behind it, in order.

The answering model is scripted: only extraction goes to the server.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from agents import Agent, Runner
from agents.memory import SQLiteSession
from agents.testing import ScriptedModel, assistant_message

from mem01session import Mem01Session, Memory
from mem01session.extraction import OpenAIExtractor
from mem01session.queue import JobStore, WorkerPolicy
from tests.compat.server import STRICTEST, FakeServer
from tests.compat.test_contract import local_settings

Factory = Callable[..., Memory]


def session_of(memory: Memory, tmp_path: Path, user: str, conversation: str) -> Mem01Session:
    inner = SQLiteSession(conversation, tmp_path / "t.sqlite")
    return Mem01Session(conversation, user, inner=inner, memory=memory)


async def say(session: Mem01Session, text: str) -> None:
    agent: Agent[Any] = Agent(name="a", model=ScriptedModel([[assistant_message("Noted.")]]))
    await Runner.run(agent, text, session=session, run_config=session.run_config())


async def test_the_extraction_timeout_is_the_setting(
    server: FakeServer, memories: Factory, tmp_path: Path
) -> None:
    server.reset(replace(STRICTEST, extraction_delay=1.0))
    one_try = WorkerPolicy(max_attempts=1)

    short = local_settings(server, MEM01_LLM_TIMEOUT="0.25")
    memory = memories(extractor=OpenAIExtractor(short), worker_policy=one_try)
    assert (await memory.worker()).extract_timeout == 0.25
    session = session_of(memory, tmp_path, "slow-1", "c1")
    await say(session, "I live in Oslo.")
    assert not await session.flush_memory(timeout=60)
    error = session.last_memory_error or ""
    assert "0.25 s" in error and "MEM01_LLM_TIMEOUT" in error, error

    # The same slow server, the setting raised above its delay: applied.
    enough = local_settings(server, MEM01_LLM_TIMEOUT="20")
    memory = memories(extractor=OpenAIExtractor(enough), worker_policy=one_try)
    assert (await memory.worker()).extract_timeout == 20
    session = session_of(memory, tmp_path, "slow-2", "c2")
    await say(session, "I live in Oslo.")
    assert await session.flush_memory(timeout=60), session.last_memory_error
    history = await (await memory.engine()).history("slow-2")
    assert [b.content for b in history] == ["Lives in Oslo"]


async def test_a_failing_turn_is_parked_and_does_not_hold_the_next(
    server: FakeServer, memories: Factory, tmp_path: Path
) -> None:
    server.reset(replace(STRICTEST, cut_off="ramble"))
    settings = local_settings(server)
    policy = WorkerPolicy(backoff_base=0.01)  # the default number of tries, quick backoffs
    memory = memories(extractor=OpenAIExtractor(settings), worker_policy=policy)
    user = "cut-off"
    session = session_of(memory, tmp_path, user, "c1")
    for said in ("I live in Oslo, let me ramble on.", "I moved to Lisbon.", "The rent is $900."):
        await say(session, said)

    assert not await session.flush_memory(timeout=60)  # settled, one of them failed
    error = session.last_memory_error or ""
    assert "1 accepted turn(s) failed" in error and "MEM01_LLM_MAX_TOKENS" in error, error
    engine = await memory.engine()
    store = JobStore(engine.db)
    jobs = sorted(await store.list_jobs(user_id=user), key=lambda j: j.id)
    assert [(j.status, j.attempts) for j in jobs] == [("failed", 3), ("done", 1), ("done", 1)]
    assert [j.id for j in await store.list_jobs(user_id=user, status="failed")] == [jobs[0].id]
    active = sorted(b.content for b in await engine.history(user) if b.status == "active")
    assert active == ["Lives in Lisbon", "Pays $900 a month in rent"]
    # The parked turn's words are kept (recall can quote them); nothing else of it is.
    words = [e.content for e in await engine.episodes(user)]
    assert "I live in Oslo, let me ramble on." in words
