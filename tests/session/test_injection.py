"""The memory block reaches every model call of a run and never the transcript."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable
from typing import Any

from agents import Agent, RunConfig, Runner, function_tool
from agents.run_config import CallModelData, ModelInputData
from agents.testing import ScriptedModel, assistant_message, function_call

from mem01session.engine import BeliefEngine, RecallRequest
from mem01session.engine.ops import Op, Provenance
from mem01session.engine.render import OPEN as MEMORY_MARKER
from mem01session.session import Mem01Session
from mem01session.session.items import MemoryCarrier


async def remember(engine: BeliefEngine, user_id: str, *contents: str) -> None:
    await engine.apply(
        user_id, [Op.add(c) for c in contents], provenance=Provenance(session_id="earlier")
    )


def blocks_in(items: Any) -> list[str]:
    text = json.dumps(items, default=str)
    return [MEMORY_MARKER] if MEMORY_MARKER in text else []


def count_recalls(engine: BeliefEngine, started: threading.Event | None = None) -> list[str]:
    """The queries the engine recalls for, from now on (``started`` is set at each)."""
    queries: list[str] = []
    original = engine.recall_probed

    async def counting(user_id: str, request: RecallRequest, probe: Any) -> Any:
        queries.append(request.query)
        if started is not None:
            started.set()
        return await original(user_id, request, probe)

    engine.recall_probed = counting  # type: ignore[method-assign]
    return queries


def block_position_ok(items: list[Any]) -> bool:
    """The block sits in front of the words of the last user message, as the user's own
    (no item of more authority carries it)."""
    roles = [i.get("role") for i in items if isinstance(i, dict)]
    last_user = max(i for i, r in enumerate(roles) if r == "user")
    carrier = items[last_user]
    return (
        isinstance(carrier, MemoryCarrier)
        and str(carrier.get("content", "")).startswith(carrier.block)
        and not any(MEMORY_MARKER in json.dumps(i) for i in items[:last_user])
    )


async def test_plain_run(make_session: Callable[..., Mem01Session], engine: BeliefEngine) -> None:
    await remember(engine, "user-1", "Lives in San Francisco")
    session = make_session("conv-a")
    model = ScriptedModel([[assistant_message("You live in San Francisco.")]])
    agent = Agent(name="a", model=model)

    await Runner.run(agent, "Where do I live?", session=session, run_config=session.run_config())

    (call,) = model.calls
    assert "Lives in San Francisco" in json.dumps(call.input)
    assert block_position_ok(list(call.input))
    transcript = await session.get_items()
    assert [i.get("role") for i in transcript] == ["user", "assistant"]
    assert blocks_in(transcript) == []


async def test_run_with_tool_calls_recalls_once(
    make_session: Callable[..., Mem01Session], engine: BeliefEngine
) -> None:
    await remember(engine, "user-1", "Lives in San Francisco")
    recalls = count_recalls(engine)

    @function_tool
    def weather(city: str) -> str:
        """Weather for a city."""
        return f"sunny in {city}"

    session = make_session("conv-tools")
    model = ScriptedModel(
        [
            [function_call("weather", {"city": "San Francisco"}, call_id="c1")],
            [function_call("weather", {"city": "Oakland"}, call_id="c2")],
            [assistant_message("Sunny.")],
        ]
    )
    agent = Agent(name="a", model=model, tools=[weather])
    result = await Runner.run(
        agent, "Weather at home?", session=session, run_config=session.run_config()
    )

    assert result.final_output == "Sunny."
    assert len(model.calls) == 3
    for call in model.calls:
        assert "Lives in San Francisco" in json.dumps(call.input)
    assert recalls == ["Weather at home?"]
    transcript = await session.get_items()
    assert blocks_in(transcript) == []
    assert [i.get("type") for i in transcript].count("function_call_output") == 2


async def test_streamed_run(
    make_session: Callable[..., Mem01Session], engine: BeliefEngine
) -> None:
    await remember(engine, "user-1", "Has a dog named Rex")
    recalls = count_recalls(engine)
    session = make_session("conv-stream")
    model = ScriptedModel([[assistant_message("Rex!")]])
    agent = Agent(name="a", model=model)

    result = Runner.run_streamed(
        agent, "What is my dog called?", session=session, run_config=session.run_config()
    )
    async for _ in result.stream_events():
        pass

    assert result.final_output == "Rex!"
    assert "Has a dog named Rex" in json.dumps(model.calls[0].input)
    assert blocks_in(await session.get_items()) == []
    # A streamed run stores its input after the first model call: no second recall then.
    assert recalls == ["What is my dog called?"]


async def test_recall_starts_when_the_input_is_stored(
    make_session: Callable[..., Mem01Session], engine: BeliefEngine
) -> None:
    await remember(engine, "user-1", "Has a dog named Rex")
    started = threading.Event()
    recalls = count_recalls(engine, started)
    session = make_session("conv-early")
    model = ScriptedModel([[assistant_message("Rex!")]])
    began_while_storing: list[bool] = []
    inner_add = session._inner.add_items

    async def add_items(items: Any) -> None:
        await inner_add(items)
        if not model.calls:  # the input, stored before the model is called
            # The recall runs on the memory's own loop: it begins without this store
            # returning. One begun only by the model-input filter (after the store) would
            # leave this wait to run out.
            began_while_storing.append(await asyncio.to_thread(started.wait, 30))

    session._inner.add_items = add_items  # type: ignore[method-assign]
    await Runner.run(
        Agent(name="a", model=model), "My dog?", session=session, run_config=session.run_config()
    )
    assert began_while_storing == [True]  # already under way while the input was stored
    assert recalls == ["My dog?"]  # and the model call used it: no second recall
    assert "Has a dog named Rex" in json.dumps(model.calls[0].input)


async def test_without_run_config_nothing_is_recalled(
    make_session: Callable[..., Mem01Session], engine: BeliefEngine
) -> None:
    await remember(engine, "user-1", "Has a dog named Rex")
    recalls = count_recalls(engine)
    session = make_session("conv-plain")
    model = ScriptedModel([[assistant_message("Hi.")]])
    await Runner.run(Agent(name="a", model=model), "Hello", session=session)
    assert recalls == []
    assert MEMORY_MARKER not in json.dumps(model.calls[0].input)


async def test_caller_filter_and_callback_are_kept(
    make_session: Callable[..., Mem01Session], engine: BeliefEngine
) -> None:
    await remember(engine, "user-1", "Prefers window seats")
    seen: list[int] = []

    def caller_filter(data: CallModelData[Any]) -> ModelInputData:
        seen.append(len(data.model_data.input))
        return ModelInputData(
            input=[*data.model_data.input, {"role": "user", "content": "caller-added"}],
            instructions="caller instructions",
        )

    base = RunConfig(workflow_name="caller workflow", call_model_input_filter=caller_filter)
    session = make_session("conv-filter")
    model = ScriptedModel([[assistant_message("Window seat noted.")]])
    agent = Agent(name="a", model=model)

    config = session.run_config(base)
    assert config.workflow_name == "caller workflow"
    assert base.call_model_input_filter is caller_filter  # the caller's config is untouched
    await Runner.run(agent, "Book me a seat", session=session, run_config=config)

    (call,) = model.calls
    text = json.dumps(call.input)
    assert seen == [1]
    assert "caller-added" in text and "Prefers window seats" in text
    assert call.system_instructions == "caller instructions"
    assert blocks_in(await session.get_items()) == []


async def test_no_memory_means_no_block(make_session: Callable[..., Mem01Session]) -> None:
    session = make_session("conv-empty", user_id="nobody")
    model = ScriptedModel([[assistant_message("Hello.")]])
    await Runner.run(
        Agent(name="a", model=model), "Hi", session=session, run_config=session.run_config()
    )
    assert MEMORY_MARKER not in json.dumps(model.calls[0].input)


async def test_caller_session_input_callback_is_kept(
    make_session: Callable[..., Mem01Session], engine: BeliefEngine
) -> None:
    await remember(engine, "user-1", "Speaks Portuguese")
    session = make_session("conv-cb")
    await session.add_items([{"role": "user", "content": "old message"}])

    def only_new(history: list[Any], new: list[Any]) -> list[Any]:
        return new  # the caller drops the history from the model input

    model = ScriptedModel([[assistant_message("Olá.")]])
    config = session.run_config(RunConfig(session_input_callback=only_new))
    await Runner.run(Agent(name="a", model=model), "Hello", session=session, run_config=config)

    seen = json.dumps(model.calls[0].input)
    assert "old message" not in seen
    assert "Speaks Portuguese" in seen


async def test_a_reused_run_config_recalls_again_on_the_next_run(
    make_session: Callable[..., Mem01Session], engine: BeliefEngine
) -> None:
    session = make_session("conv-reuse", user_id="reuser")
    config = session.run_config()
    model = ScriptedModel([[assistant_message("One.")], [assistant_message("Two.")]])
    agent = Agent(name="a", model=model)

    await Runner.run(agent, "Tell me about my pets", session=session, run_config=config)
    await remember(engine, "reuser", "Has a cat named Tom")
    await Runner.run(agent, "Tell me about my pets", session=session, run_config=config)

    first, second = model.calls
    assert "Has a cat named Tom" not in json.dumps(first.input)
    assert "Has a cat named Tom" in json.dumps(second.input)
