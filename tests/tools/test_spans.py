"""Memory in the SDK's traces: the recall and the enqueue of a run as spans of its trace, an
extraction job as a trace of its own; no user text unless the run's setting allows it, and
never from the worker."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from typing import Any

import pytest
from agents import Agent, RunConfig, Runner
from agents.testing import ScriptedModel, assistant_message, function_call
from agents.tracing import (
    Span,
    Trace,
    TracingProcessor,
    get_trace_provider,
    set_trace_processors,
    set_tracing_disabled,
)

from mem01session import Mem01Session, Memory, memory_tools
from mem01session.engine import BeliefEngine
from mem01session.engine.ops import Op, Provenance
from mem01session.extraction import Candidate, Extraction, Turn
from mem01session.spans import ENQUEUE, EXTRACT, JOB_WORKFLOW, RECALL
from tests.session.conftest import Gate, MemoryFactory


class Collector(TracingProcessor):
    """Keeps every finished trace and span, as exported."""

    def __init__(self) -> None:
        self.traces: list[dict[str, Any]] = []
        self.spans: list[dict[str, Any]] = []

    def on_trace_start(self, trace: Trace) -> None:
        pass

    def on_trace_end(self, trace: Trace) -> None:
        self.traces.append(trace.export() or {})

    def on_span_start(self, span: Span[Any]) -> None:
        pass

    def on_span_end(self, span: Span[Any]) -> None:
        self.spans.append(span.export() or {})

    def shutdown(self) -> None:
        pass

    def force_flush(self) -> None:
        pass

    def custom(self, name: str) -> list[dict[str, Any]]:
        return [
            s
            for s in self.spans
            if s["span_data"]["type"] == "custom" and s["span_data"]["name"] == name
        ]

    def workflow(self, trace_id: str) -> str:
        return next(str(t["workflow_name"]) for t in self.traces if t["id"] == trace_id)

    def everything(self) -> str:
        return json.dumps([self.traces, self.spans], default=str)


@pytest.fixture
def traces() -> Iterator[Collector]:
    """Tracing on, exported to a collector only (never to a server), for this test."""
    provider = get_trace_provider()
    before = list(getattr(getattr(provider, "_multi_processor", None), "_processors", ()))
    collector = Collector()
    set_trace_processors([collector])
    set_tracing_disabled(False)
    yield collector
    set_tracing_disabled(True)
    set_trace_processors(before)


async def test_a_run_trace_holds_its_recall_and_its_enqueue(
    make_session: Callable[..., Mem01Session],
    engine: BeliefEngine,
    memory: Memory,
    traces: Collector,
) -> None:
    await engine.apply(
        "fay", [Op.add("Lives in Lisbon", key="home.city")], provenance=Provenance(extractor="t")
    )
    session = make_session("c1", "fay")
    model = ScriptedModel([[assistant_message("In Lisbon.")]])
    await Runner.run(
        Agent(name="a", model=model),
        "Where do I live?",
        session=session,
        run_config=session.run_config(),
    )
    await memory.aclose()  # the worker has finished its job, and its trace

    [recall] = traces.custom(RECALL)
    [enqueue] = traces.custom(ENQUEUE)
    assert traces.workflow(recall["trace_id"]) == "Agent workflow"
    assert enqueue["trace_id"] == recall["trace_id"]  # both in the run's own trace
    data = recall["span_data"]["data"]
    assert {k: data[k] for k in ("available", "beliefs", "episodes", "stale", "waited_ms")} == {
        "available": True,
        "beliefs": 1,
        "episodes": 0,
        "stale": False,
        "waited_ms": 0.0,
    }
    assert 0 < data["tokens"] <= data["max_tokens"] == session.max_memory_tokens
    assert data["candidates"] >= 1 and data["read_ms"] >= 0 and data["duration_ms"] >= 0
    # The SDK's default includes sensitive data: the query and the block are there too.
    assert data["query"] == "Where do I live?" and "Lives in Lisbon" in data["block"]
    # The job the turn became: a trace of its own, named by the run's enqueue span, without
    # the user's words.
    [job] = traces.custom(EXTRACT)
    assert enqueue["span_data"]["data"]["job_ids"] == [job["span_data"]["data"]["job_id"]]
    assert enqueue["span_data"]["data"]["unsent_turns"] == 0
    assert traces.workflow(job["trace_id"]) == JOB_WORKFLOW
    assert job["trace_id"] != recall["trace_id"] and job["parent_id"] is None
    assert job["span_data"]["data"]["outcome"] == "done"
    assert "Where do I live" not in json.dumps(job) and "In Lisbon" not in json.dumps(job)


class GatedExtractor:
    name = "gated"

    def __init__(self) -> None:
        self.entered = Gate()
        self.release = Gate()

    async def extract(
        self, turn: Turn, candidates: Sequence[Candidate], now: datetime
    ) -> Extraction:
        self.entered.set()
        await self.release.wait()
        return Extraction(ops=())


async def test_a_recall_says_what_it_quoted_of_turns_still_queued(
    make_session: Callable[..., Mem01Session], memories: MemoryFactory, traces: Collector
) -> None:
    gated = GatedExtractor()
    memory = memories(extractor=gated)
    elsewhere = make_session("c-other", "gil", memory=memory)
    await Runner.run(
        Agent(name="a", model=ScriptedModel([[assistant_message("Ok.")]])),
        "I like jazz.",
        session=elsewhere,
        run_config=elsewhere.run_config(),
    )
    await gated.entered.wait()  # that turn is being extracted, and stays so
    here = make_session("c-here", "gil", memory=memory)
    await Runner.run(
        Agent(name="a", model=ScriptedModel([[assistant_message("Ok.")]])),
        "What music do I like?",
        session=here,
        run_config=here.run_config(),
    )
    gated.release.set()
    await memory.aclose()  # the job ends, and its trace, while the collector listens
    data = [s["span_data"]["data"] for s in traces.custom(RECALL)]
    assert [d["stale"] for d in data] == [False, False]  # the pending turn is quoted…
    assert (data[1]["pending_turns"], data[1]["pending_quoted"]) == (1, 1)
    assert data[1]["waited_ms"] == 0  # …not waited for


async def test_no_user_text_in_any_span_when_sensitive_data_is_off(
    make_session: Callable[..., Mem01Session],
    engine: BeliefEngine,
    memory: Memory,
    traces: Collector,
) -> None:
    session = make_session("conv-secretive", "user-gus-7")
    quiet = RunConfig(trace_include_sensitive_data=False)
    model = ScriptedModel(
        [
            [function_call("remember", {"statement": "Has a parrot named Quetzal"}, call_id="r")],
            [function_call("search_memory", {"query": "parrot Quetzal"}, call_id="s")],
            [assistant_message("Noted, Zanzibar and Quetzal.")],
        ]
    )
    agent = Agent(name="a", model=model, tools=memory_tools(session))
    await Runner.run(
        agent, "I live in Zanzibar.", session=session, run_config=session.run_config(quiet)
    )
    assert await session.flush_memory(timeout=60)  # the turn was extracted: Lives in Zanzibar
    model = ScriptedModel([[assistant_message("In Zanzibar, with Quetzal.")]])
    await Runner.run(
        Agent(name="a", model=model),
        "Where do I live?",
        session=session,
        run_config=session.run_config(quiet),
    )
    assert "Zanzibar" in json.dumps(model.calls[0].input)  # the model was shown the memory
    await memory.aclose()

    recalls = [s["span_data"]["data"] for s in traces.custom(RECALL)]
    assert len(recalls) == 2 and recalls[1]["beliefs"] == 2
    assert all("query" not in d and "block" not in d for d in recalls)
    jobs = [s["span_data"]["data"] for s in traces.custom(EXTRACT)]
    assert sorted(j["ops"] for j in jobs) == [0, 1]  # the two turns: one fact, one question
    [job] = [j for j in jobs if j["ops"]]
    assert {k: job[k] for k in ("extractor", "ops", "kinds", "outcome", "attempt")} == {
        "extractor": "scripted",
        "ops": 1,
        "kinds": {"ADD": 1},
        "outcome": "done",
        "attempt": 1,
    }
    assert isinstance(job["job_id"], int) and job["duration_ms"] >= 0
    everything = traces.everything()
    for words in ("Zanzibar", "Quetzal", "parrot", "Where do I live", "gus-7", "secretive"):
        assert words not in everything, words
