"""A run marks its own memory work for the worker to give way to (its recall, up to the
model call, and its enqueue) and never its wait for the model; no mark outlives the run."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from agents import Agent, Runner
from agents.testing import ScriptedModel, assistant_message

from mem01session.engine import BeliefEngine, RecallRequest
from mem01session.queue import JobStore
from mem01session.queue.foreground import FOREGROUND, MARK_SECONDS
from mem01session.session import Mem01Session


@pytest.fixture(autouse=True)
def no_marks_of_earlier_tests(monkeypatch: pytest.MonkeyPatch) -> None:
    """FOREGROUND is the process's: a run of an earlier test that stopped before its model
    call left a mark that lasts MARK_SECONDS. Seen from a clock that far ahead, it has
    lapsed; this test's marks are timed on the same clock."""
    monkeypatch.setattr(FOREGROUND, "_clock", lambda: time.monotonic() + MARK_SECONDS)


class Seen:
    """Whether the process was marked busy at each step of a run."""

    def __init__(self, engine: BeliefEngine, monkeypatch: pytest.MonkeyPatch) -> None:
        self.at: list[tuple[str, bool]] = []
        recall, enqueue = engine.recall_probed, JobStore.enqueue

        async def recalling(user_id: str, request: RecallRequest, probe: Any) -> Any:
            self.at.append(("recall", FOREGROUND.busy()))
            return await recall(user_id, request, probe)

        async def enqueuing(store: JobStore, *args: Any, **kwargs: Any) -> int:
            self.at.append(("enqueue", FOREGROUND.busy()))
            return await enqueue(store, *args, **kwargs)

        monkeypatch.setattr(engine, "recall_probed", recalling)
        monkeypatch.setattr(JobStore, "enqueue", enqueuing)

    def model(self, answer: str) -> ScriptedModel:
        model = ScriptedModel([[assistant_message(answer)]])
        respond = model.get_response

        async def responding(*args: Any, **kwargs: Any) -> Any:
            self.at.append(("model", FOREGROUND.busy()))
            return await respond(*args, **kwargs)

        model.get_response = responding  # type: ignore[method-assign]
        return model


async def test_a_run_is_marked_while_it_recalls_and_enqueues_not_while_the_model_answers(
    make_session: Callable[..., Mem01Session],
    engine: BeliefEngine,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen = Seen(engine, monkeypatch)
    session = make_session("conv-marked")
    agent = Agent(name="a", model=seen.model("Noted."))
    await Runner.run(agent, "I live in Lisbon.", session=session, run_config=session.run_config())
    assert seen.at == [("recall", True), ("model", False), ("enqueue", True)]
    assert not FOREGROUND.busy()


async def test_a_run_without_the_filter_marks_only_its_enqueue(
    make_session: Callable[..., Mem01Session],
    engine: BeliefEngine,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen = Seen(engine, monkeypatch)
    session = make_session("conv-plain")
    await Runner.run(Agent(name="a", model=seen.model("Hi.")), "Hello", session=session)
    assert seen.at == [("model", False), ("enqueue", True)]
    assert not FOREGROUND.busy()


async def test_a_run_that_stops_before_its_model_call_leaves_no_mark_after_close(
    make_session: Callable[..., Mem01Session],
) -> None:
    session = make_session("conv-stopped")
    session.run_config()
    await session.get_items()  # the run reads its history, then fails before the model
    assert FOREGROUND.busy()
    await session.aclose()
    assert not FOREGROUND.busy()
