"""Memory placements (user by default, system and instructions when asked for), and the
retry without the block that a refused placement gets."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx2
import openai
import pytest
from agents import (
    Agent,
    ModelSettings,
    OpenAIChatCompletionsModel,
    OpenAIResponsesModel,
    RunConfig,
    Runner,
    function_tool,
)
from agents.items import ModelResponse, TResponseStreamEvent
from agents.models.interface import Model
from agents.retry import ModelRetrySettings, retry_policies
from agents.run_config import ModelInputData
from agents.testing import ScriptedModel, assistant_message, function_call
from agents.usage import Usage

from mem01session.demo.offline_model import OfflineAnswerModel
from mem01session.engine import BeliefEngine
from mem01session.engine.render import FOOTER, OPEN
from mem01session.errors import ConfigError
from mem01session.session import Mem01Session
from mem01session.session.items import (
    MemoryCarrier,
    MemoryPart,
    item_text,
    memory_texts,
    turn_messages,
)
from mem01session.session.placement import choose, place
from tests.session.test_injection import count_recalls, remember

Make = Callable[..., Mem01Session]


def run(session: Mem01Session, model: Model, text: str, **agent: Any) -> Any:
    return Runner.run(
        Agent(name="a", model=model, **agent),
        text,
        session=session,
        run_config=session.run_config(),
    )


async def test_user_placement_goes_in_front_of_the_current_message_only(
    make_session: Make, engine: BeliefEngine
) -> None:
    await remember(engine, "user-1", "Lives in Lisbon")
    recalls = count_recalls(engine)

    @function_tool
    def weather(city: str) -> str:
        """Weather for a city."""
        return f"sunny in {city}"

    session = make_session("conv-user", memory_placement="user")
    model = ScriptedModel(
        [
            [function_call("weather", {"city": "Lisbon"}, call_id="c1")],
            [assistant_message("Sunny.")],
        ]
    )
    await run(session, model, "Weather at home?", tools=[weather])

    assert recalls == ["Weather at home?"]  # the user's words, not the block
    for call in model.calls:
        carriers = [i for i in call.input if isinstance(i, MemoryCarrier)]
        assert len(carriers) == 1 and json.dumps(call.input).count(OPEN) == 1
        content = carriers[0]["content"]  # a string, as the SDK's item had it
        assert content == f"{carriers[0].block}\n\nWeather at home?"
        assert "Lives in Lisbon" in carriers[0].block and carriers[0].block.endswith(FOOTER)
        assert carriers[0].original == {"role": "user", "content": "Weather at home?"}
        assert memory_texts(call.input) == [carriers[0].block]
    transcript = await session.get_items()
    assert transcript[0] == {"role": "user", "content": "Weather at home?"}  # untouched
    assert OPEN not in json.dumps(transcript)
    # Even a carrier that somehow reached extraction gives up only the user's words.
    (message,) = turn_messages([model.calls[0].input[-1]])
    assert message.text == "Weather at home?"


def test_user_placement_keeps_the_parts_of_a_message_and_its_words_apart() -> None:
    """Parts: the block goes into the first text part, a blank line before the user's
    words; a message that does not begin with text gets the block as a part of its own."""
    block = f"{OPEN}\n- Lives in Lisbon\n{FOOTER}"
    image = {"type": "input_image", "image_url": "data:,"}
    for content, said in (
        ([{"type": "input_text", "text": "Where?"}, image], "Where?"),
        ([image, {"type": "input_text", "text": "What is this?"}], "What is this?"),
    ):
        message = {"role": "user", "content": content}
        (carrier,) = place(ModelInputData(input=[message], instructions=None), block, "user").input
        assert isinstance(carrier, MemoryCarrier) and carrier.original is message
        first = carrier["content"][0]
        assert isinstance(first, MemoryPart) and first["type"] == "input_text"
        assert first["text"] == (f"{block}\n\n{said}" if content[0] is not image else block)
        assert len(carrier["content"]) == len(content) + (content[0] is image)
        assert item_text(carrier) == said and memory_texts([carrier]) == [block]
        assert message["content"] is content  # the SDK's own item is untouched


async def test_user_placement_in_a_streamed_run(make_session: Make, engine: BeliefEngine) -> None:
    await remember(engine, "user-1", "Has a dog named Rex")
    session = make_session("conv-stream", memory_placement="user")
    model = ScriptedModel([[assistant_message("Rex!")]])
    result = Runner.run_streamed(
        Agent(name="a", model=model), "My dog?", session=session, run_config=session.run_config()
    )
    async for _ in result.stream_events():
        pass
    assert "Has a dog named Rex" in json.dumps(model.calls[0].input)
    assert OPEN not in json.dumps(await session.get_items())


async def test_instructions_placement_is_for_this_call_only(
    make_session: Make, engine: BeliefEngine
) -> None:
    await remember(engine, "user-1", "Prefers window seats")
    session = make_session("conv-instr", memory_placement="instructions")
    model = ScriptedModel([[assistant_message("Noted.")], [assistant_message("Again.")]])
    agent = Agent(name="a", instructions="Be brief.", model=model)
    for text in ("Book a seat", "And another"):
        await Runner.run(agent, text, session=session, run_config=session.run_config())

    for call in model.calls:
        assert call.system_instructions.startswith("Be brief.\n\n" + OPEN)
        assert "Prefers window seats" in call.system_instructions
        assert OPEN not in json.dumps(call.input)
    assert agent.instructions == "Be brief."


def test_a_placement_that_does_not_exist_is_refused(make_session: Make) -> None:
    with pytest.raises(ConfigError, match="memory_placement"):
        make_session("conv-bad", memory_placement="assistant")


def _chat() -> OpenAIChatCompletionsModel:
    return OpenAIChatCompletionsModel("m", openai.AsyncOpenAI(api_key="sk-test-unused"))


def test_auto_gives_the_block_no_more_authority_than_the_users_own_message() -> None:
    assert choose("auto") == "user"
    assert choose("instructions") == "instructions"  # system authority: only when asked
    assert choose("system") == "system"


def test_a_refused_placement_never_falls_back_to_more_authority() -> None:
    assert choose("auto", frozenset({"user"})) is None  # the run goes without memory
    assert choose("system", frozenset({"system"})) == "user"
    assert choose("instructions", frozenset({"instructions", "user"})) == "system"
    assert choose("system", frozenset({"system", "user", "instructions"})) is None


def test_a_call_with_no_user_message_gets_no_block() -> None:
    data = ModelInputData(input=[{"role": "assistant", "content": "Hi"}], instructions="be kind")
    placed = place(data, "<memory>\n- Lives in Oslo\n</memory>", "user")
    assert placed.input == data.input and placed.instructions == "be kind"


class FlakyModel(Model):
    """Fails with the given errors, in order, then answers; records what it was given."""

    def __init__(self, *errors: Exception) -> None:
        self.errors = list(errors)
        self.inputs: list[tuple[str | None, str]] = []

    async def get_response(
        self, system_instructions: Any, input: Any, *args: Any, **kw: Any
    ) -> ModelResponse:
        self.inputs.append((system_instructions, json.dumps(input, default=str)))
        if self.errors:
            raise self.errors.pop(0)
        return ModelResponse(output=[assistant_message("Done.")], usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[TResponseStreamEvent]:
        raise NotImplementedError


def status_error(status: int, message: str) -> openai.APIStatusError:
    response = httpx2.Response(
        status, request=httpx2.Request("POST", "http://local/v1/chat/completions")
    )
    return openai.APIStatusError(message, response=response, body={"error": {"message": message}})


ALTERNATE = "Conversation roles must alternate user/assistant/user/assistant/..."


@pytest.mark.parametrize("placement", ["system", "user", "instructions"])
async def test_a_refused_placement_is_retried_once_without_the_block(
    make_session: Make, engine: BeliefEngine, placement: str
) -> None:
    await remember(engine, "user-1", "Lives in Lisbon")
    session = make_session(f"conv-{placement}", memory_placement=placement)
    model = FlakyModel(status_error(500, ALTERNATE))
    result = await run(session, model, "Where do I live?", instructions="Be brief.")

    assert result.final_output == "Done."
    (first_instr, first), (second_instr, second) = model.inputs
    assert "Lives in Lisbon" in first + (first_instr or "")
    assert "Lives in Lisbon" not in second + (second_instr or "")
    assert second_instr == "Be brief." and "Where do I live?" in second
    assert f"placement {placement!r}" in (session.last_memory_error or "")


async def test_a_refused_placement_is_not_tried_again_for_that_model(
    make_session: Make, engine: BeliefEngine
) -> None:
    """Each refusal moves the model's later runs to the next placement; when all were
    refused, runs go without the block at once, saying so: no more rejected calls."""
    await remember(engine, "user-1", "Lives in Lisbon")

    class RefusesMemory(FlakyModel):  # a server that takes the block nowhere
        async def get_response(
            self, system_instructions: Any, input: Any, *args: Any, **kw: Any
        ) -> ModelResponse:
            if OPEN in (system_instructions or "") + json.dumps(input, default=str):
                self.errors.append(status_error(500, ALTERNATE))
            return await super().get_response(system_instructions, input, *args, **kw)

    model = RefusesMemory()
    said = []
    for n in range(5):
        session = make_session(f"conv-ladder-{n}", memory_placement="system")
        result = await run(session, model, "Where do I live?", instructions="Be brief.")
        assert result.final_output == "Done."
        said.append(session.last_memory_error or "")
    assert "as 'user'" in said[0] and "placement 'user'" in said[1]
    assert "as 'instructions'" in said[1] and "placement 'instructions'" in said[2]
    assert "go without memory" in said[2]
    assert all(s.startswith("injection skipped") for s in said[3:])
    assert len(model.inputs) == 3 * 2 + 2  # three refused calls and their retries, then two
    assert not any("Lives in Lisbon" in (i or "") + t for i, t in model.inputs[6:])


@pytest.mark.parametrize(
    ("status", "message"),
    [
        (401, "Incorrect API key provided (role: user)"),
        (400, "Invalid schema for response_format 'final_output': content missing"),
        (500, "CUDA out of memory"),
    ],
)
async def test_a_refusal_that_is_not_about_the_input_is_not_retried(
    make_session: Make, engine: BeliefEngine, status: int, message: str
) -> None:
    await remember(engine, "user-1", "Lives in Lisbon")
    session = make_session("conv-other", memory_placement="system")
    model = FlakyModel(status_error(status, message))
    with pytest.raises(openai.APIStatusError):
        await run(session, model, "Where do I live?")
    assert len(model.inputs) == 1
    assert session.last_memory_error is None


async def test_a_block_beyond_the_context_size_is_retried_without_it(
    make_session: Make, engine: BeliefEngine
) -> None:
    await remember(engine, "user-1", "Lives in Lisbon")
    session = make_session("conv-ctx")  # auto: unknown model API, a system message
    too_long = status_error(400, "This model's maximum context length is 2048 tokens.")
    result = await run(session, FlakyModel(too_long), "Where do I live?")
    assert result.final_output == "Done."
    assert "placement 'user'" in (session.last_memory_error or "")


async def test_without_memory_nothing_is_retried(make_session: Make) -> None:
    session = make_session("conv-empty", user_id="nobody", memory_placement="system")
    model = FlakyModel(status_error(500, ALTERNATE))
    with pytest.raises(openai.APIStatusError, match="alternate"):
        await run(session, model, "Hello")
    assert len(model.inputs) == 1


async def test_the_rest_of_the_run_goes_without_the_block(
    make_session: Make, engine: BeliefEngine
) -> None:
    await remember(engine, "user-1", "Lives in Lisbon")

    @function_tool
    def weather(city: str) -> str:
        """Weather for a city."""
        return "sunny"

    class ToolThenAnswer(FlakyModel):
        async def get_response(
            self, system_instructions: Any, input: Any, *args: Any, **kw: Any
        ) -> ModelResponse:
            if len(self.inputs) == 1:  # after the refused call: ask for a tool
                self.inputs.append((system_instructions, json.dumps(input, default=str)))
                call = function_call("weather", {"city": "Lisbon"}, call_id="c1")
                return ModelResponse(output=[call], usage=Usage(), response_id=None)
            return await super().get_response(system_instructions, input, *args, **kw)

    session = make_session("conv-loop", memory_placement="system")
    model = ToolThenAnswer(status_error(500, ALTERNATE))
    await run(session, model, "Weather at home?", tools=[weather])
    assert len(model.inputs) == 3
    assert ["Lives in Lisbon" in text for _, text in model.inputs] == [True, False, False]


async def test_the_callers_retry_settings_still_decide_other_failures(
    make_session: Make, engine: BeliefEngine
) -> None:
    await remember(engine, "user-1", "Lives in Lisbon")
    busy = status_error(503, "overloaded")
    retrying = ModelSettings(
        retry=ModelRetrySettings(
            max_retries=2, backoff={"initial_delay": 0}, policy=retry_policies.http_status([503])
        )
    )
    # The agent's own policy: two 503s are retried, and the refused block is retried too.
    model = FlakyModel(status_error(500, ALTERNATE), busy, busy)
    session = make_session("conv-retry", memory_placement="system")
    result = await run(session, model, "Where do I live?", model_settings=retrying)
    assert result.final_output == "Done." and len(model.inputs) == 4

    # A third 503 is one more than the agent allows: it reaches the caller.
    model = FlakyModel(busy, busy, busy)
    with pytest.raises(openai.APIStatusError, match="overloaded"):
        await run(session, model, "Where do I live?", model_settings=retrying)
    assert len(model.inputs) == 3

    # Without retry settings of its own, a 503 is not retried (as without memory).
    model = FlakyModel(busy)
    with pytest.raises(openai.APIStatusError):
        await run(session, model, "Where do I live?")
    assert len(model.inputs) == 1

    # Settings on the caller's RunConfig count as well.
    model = FlakyModel(busy)
    config = session.run_config(RunConfig(model_settings=retrying))
    await Runner.run(Agent(name="a", model=model), "Where?", session=session, run_config=config)
    assert len(model.inputs) == 2


async def test_strict_sessions_are_not_retried(make_session: Make, engine: BeliefEngine) -> None:
    await remember(engine, "user-1", "Lives in Lisbon")
    session = make_session("conv-strict", memory_placement="system", strict=True)
    model = FlakyModel(status_error(500, ALTERNATE))
    with pytest.raises(openai.APIStatusError, match="alternate"):
        await run(session, model, "Where do I live?")
    assert len(model.inputs) == 1


@pytest.mark.parametrize("placement", ["system", "user", "instructions"])
async def test_the_offline_model_reads_the_block_wherever_it_is(
    make_session: Make, engine: BeliefEngine, placement: str
) -> None:
    await remember(engine, "user-1", "Lives in Lisbon")
    session = make_session(f"conv-offline-{placement}", memory_placement=placement)
    result = await run(session, OfflineAnswerModel(), "Where do I live?", instructions="Hi.")
    assert result.final_output == "You live in Lisbon."


async def test_the_responses_api_gets_the_block_as_the_users_own_words(
    make_session: Make, engine: BeliefEngine
) -> None:
    await remember(engine, "user-1", "Lives in San Francisco")
    bodies: list[dict[str, Any]] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        bodies.append(json.loads(request.content))
        return httpx2.Response(500, json={"error": {"message": "stop here"}})

    http = httpx2.AsyncClient(transport=httpx2.MockTransport(handler))
    client = openai.AsyncOpenAI(api_key="sk-x", base_url="http://local/v1", http_client=http)
    session = make_session("conv-responses")
    with pytest.raises(openai.APIStatusError):
        await run(session, OpenAIResponsesModel("m", client), "Where do I live?")
    await http.aclose()
    body = bodies[0]
    items = body["input"]
    carrying = [i for i in items if "Lives in San Francisco" in json.dumps(i)]
    assert [i["role"] for i in carrying] == ["user"]  # in front of the question
    assert "Where do I live?" in json.dumps(carrying[0])
    assert "San Francisco" not in json.dumps(body.get("instructions"))
