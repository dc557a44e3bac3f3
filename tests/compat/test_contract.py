"""The contract with OpenAI-compatible servers, one behaviour at a time, over real HTTP.

Each test talks to the fake server (:mod:`tests.compat.server`) through the real SDK
``Runner`` (Chat Completions, as the demo builds it) and the real worker with the real
``OpenAIExtractor``: beliefs are stored, the run answers, and the memory reaches the
prompt the server's chat template rendered.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from agents import Agent, Runner
from agents.memory import SQLiteSession

from mem01session import Mem01Session, Memory, Settings
from mem01session.demo.run import SCRIPT, answering_model
from mem01session.embeddings import OpenAIEmbedder
from mem01session.engine import BeliefEngine
from mem01session.engine.render import OPEN
from mem01session.extraction import OpenAIExtractor
from mem01session.queue import WorkerPolicy
from mem01session.session.items import item_text
from tests.compat.server import STRICTEST, Behaviour, FakeServer
from tests.compat.templates import STRICT

Factory = Callable[..., Memory]
ONE_ATTEMPT = WorkerPolicy(max_attempts=1)


def local_settings(server: FakeServer, **overrides: Any) -> Settings:
    """What a user of a local server sets (OPENAI_API_KEY=sk-local-dummy, OPENAI_BASE_URL)."""
    env = {"OPENAI_API_KEY": "sk-local-dummy", "OPENAI_BASE_URL": server.url}
    env |= {"MEM01_LLM_MODEL": "gemma-3-270m-it", "MEM01_LLM_TIMEOUT": "20"}
    return Settings.from_env(env | overrides)


class Local:
    """One user talking to the fake server: sessions, the agent, the extractor."""

    def __init__(
        self, server: FakeServer, memories: Factory, tmp_path: Path, **kwargs: Any
    ) -> None:
        self.server = server
        self.settings = local_settings(server)
        self.extractor = OpenAIExtractor(self.settings)
        kwargs.setdefault("worker_policy", ONE_ATTEMPT)
        self.memory = memories(extractor=self.extractor, **kwargs)
        model, self.label = answering_model(self.settings)
        self.clients = [model._client]  # type: ignore[attr-defined]
        self.agent: Agent[Any] = Agent(
            name="assistant", instructions="Answer briefly.", model=model
        )
        self.store = tmp_path / "transcripts.sqlite"

    def session(self, sid: str, **kwargs: Any) -> Mem01Session:
        inner = SQLiteSession(sid, self.store)
        return Mem01Session(sid, "user-1", inner=inner, memory=self.memory, **kwargs)

    async def say(self, session: Mem01Session, text: str) -> str:
        result = await Runner.run(
            self.agent, text, session=session, run_config=session.run_config()
        )
        return str(result.final_output)

    async def aclose(self) -> None:
        await self.memory.aclose()  # the worker first: it uses the extractor's client
        await self.extractor.aclose()
        for client in self.clients:
            await client.close()

    def answer_prompts(self) -> list[str]:
        return [r.prompt or "" for r in self.server.chats(extraction=False) if r.status == 200]


@pytest.fixture
async def local(server: FakeServer, memories: Factory, tmp_path: Path) -> AsyncIterator[Local]:
    user = Local(server, memories, tmp_path)
    yield user
    await user.aclose()


async def remember_and_recall(local: Local, fact: str, question: str) -> str:
    """Say ``fact`` in one conversation; ask ``question`` in a fresh one. The answer."""
    monday = local.session("conv-1")
    await local.say(monday, fact)
    assert await monday.flush_memory(timeout=30), monday.last_memory_error
    friday = local.session("conv-2")
    answer = await local.say(friday, question)
    assert friday.last_memory_error is None
    return answer


@pytest.mark.parametrize("status", [500, 422])
async def test_a_server_refusing_json_schema_still_learns(local: Local, status: int) -> None:
    local.server.reset(Behaviour(json_schema_status=status))
    answer = await remember_and_recall(local, "I live in Lisbon.", "Where do I live?")

    history = await (await local.memory.engine()).history("user-1")
    assert [b.content for b in history] == ["Lives in Lisbon"]
    assert "Lives in Lisbon" in answer
    assert "Lives in Lisbon" in local.answer_prompts()[-1]
    formats = [
        r.body.get("response_format", {}).get("type") for r in local.server.chats(extraction=True)
    ]
    assert formats == ["json_schema", "json_object"]  # refused once, then remembered
    assert local.extractor.json_mode


async def test_no_responses_endpoint_chat_completions_is_used(local: Local) -> None:
    assert "Chat Completions" in local.label  # OPENAI_BASE_URL names another server
    answer = await remember_and_recall(local, "I moved to Porto.", "Where do I live now?")
    assert "Lives in Porto" in answer
    assert "responses" not in local.server.paths()


async def test_the_responses_api_forced_on_such_a_server_fails_loudly(local: Local) -> None:
    """What MEM01_OPENAI_API=responses does against it: the SDK's 404, not a silent miss."""
    import openai

    settings = local_settings(local.server, MEM01_OPENAI_API="responses")
    model, label = answering_model(settings)
    assert "Responses API" in label
    agent = Agent(name="assistant", model=model)
    with pytest.raises(openai.NotFoundError):
        await Runner.run(agent, "Hello", session=local.session("conv-r"))
    assert "responses" in local.server.paths()
    await model._client.close()  # type: ignore[attr-defined]


@pytest.mark.parametrize("template", STRICT)
async def test_strict_templates_render_the_memory(local: Local, template: str) -> None:
    """Gemma and Mistral (roles must alternate) and a template that drops system messages:
    the default placement for Chat Completions keeps every request valid and the memory in
    the prompt."""
    local.server.reset(Behaviour(template=template))
    answer = await remember_and_recall(local, "I live in Oslo.", "Where do I live?")
    assert "Lives in Oslo" in answer
    prompt = local.answer_prompts()[-1]
    assert "Lives in Oslo" in prompt and OPEN in prompt
    assert all(r.status == 200 for r in local.server.received)  # no refused request at all
    transcript = await local.session("conv-2").get_items()
    assert [item_text(i) for i in transcript] == ["Where do I live?", answer]
    assert OPEN not in json.dumps(transcript)  # the block never reached the transcript


async def test_per_token_embeddings_are_a_clear_error_and_never_stored(
    server: FakeServer, memories: Factory, tmp_path: Path, engine: BeliefEngine
) -> None:
    embedder = OpenAIEmbedder("fake-embed", dim=64, api_key="sk-local-dummy", base_url=server.url)
    served = BeliefEngine(engine.db, embedder)
    local = Local(server, memories, tmp_path, engine=served)
    server.reset(Behaviour(embeddings="per_token"))

    session = local.session("conv-1")
    answer = await local.say(session, "I live in Lisbon.")
    assert answer == "I don't know."  # the run answered, without memory
    assert await session.flush_memory(timeout=30) is False  # the turn failed: no "True"
    error = session.last_memory_error or ""
    assert "a list of 4 vectors of 64 numbers per text" in error
    assert "one vector per text" in error and "--pooling mean" in error
    assert await served.history("user-1") == []  # nothing garbage stored

    server.reset(Behaviour(embeddings="ok"))  # pooling switched on: the same path works
    answer = await remember_and_recall(local, "I live in Lisbon.", "Where do I live?")
    assert "Lives in Lisbon" in answer
    assert "embeddings" in server.paths()
    await local.aclose()
    await embedder.aclose()


async def test_a_placement_the_template_refuses_costs_one_rejected_call_per_model(
    local: Local,
) -> None:
    """Forced onto a system message, the block breaks Gemma's template: the call is made
    again without it, the run answers, and the session says why. The refusal is
    remembered for that model: later runs, streamed or not, place the block where the
    template takes it, and the server sees one rejected call in all."""
    from agents import OpenAIChatCompletionsModel
    from openai import AsyncOpenAI

    await remember_and_recall(local, "I live in Lisbon.", "Where do I live?")
    local.server.reset(Behaviour(template="gemma"))
    client = AsyncOpenAI(api_key="sk-local-dummy", base_url=local.server.url, max_retries=0)
    local.clients.append(client)

    def agent(model: str) -> Agent[Any]:
        chat = OpenAIChatCompletionsModel(model, client)  # a new object: the same model
        return Agent(name="a", instructions="Answer briefly.", model=chat)

    local.agent = agent("m")
    session = local.session("conv-3", memory_placement="system")
    assert await local.say(session, "Where do I live?") == "I don't know."
    first, second = local.server.chats(extraction=False)
    assert first.status == 500 and OPEN in str(first.body["messages"])
    assert second.status == 200 and OPEN not in str(second.body["messages"])
    assert "placement 'system'" in (session.last_memory_error or "")
    assert "roles must alternate" in (session.last_memory_error or "")
    assert "later runs with this model place it as 'user'" in (session.last_memory_error or "")

    for n in range(3):  # three more runs, one streamed, on new sessions and agents
        local.agent = agent("m")
        later = local.session(f"conv-4-{n}", memory_placement="system")
        if n == 1:
            streamed = Runner.run_streamed(
                local.agent, "Where do I live?", session=later, run_config=later.run_config()
            )
            async for _ in streamed.stream_events():
                pass
            answer = str(streamed.final_output)
        else:
            answer = await local.say(later, "Where do I live?")
        assert "Lisbon" in answer and later.last_memory_error is None
    statuses = [r.status for r in local.server.chats(extraction=False)]
    assert statuses == [500, 200, 200, 200, 200]  # one rejected call for four runs
    assert all("Lives in Lisbon" in (r.prompt or "") for r in local.server.chats()[-3:])

    # Another model on the same server has its own record; a strict session hears of the
    # refusal (the error is raised), and it is remembered all the same.
    local.agent = agent("m-strict")
    strict = local.session("conv-5", memory_placement="system", strict=True)
    with pytest.raises(Exception, match="roles must alternate"):
        await local.say(strict, "Where do I live?")
    again = local.session("conv-6", memory_placement="system", strict=True)
    assert "Lisbon" in await local.say(again, "Where do I live?")
    assert [r.status for r in local.server.chats(extraction=False)][5:] == [500, 200]


async def test_the_scenario_on_the_strictest_server(
    server: FakeServer, memories: Factory, tmp_path: Path
) -> None:
    """500 on json_schema, roles must alternate, no /v1/responses, no embeddings endpoint:
    Monday and Wednesday are learned, Friday's answer is given San Francisco."""
    server.reset(STRICTEST)
    local = Local(server, memories, tmp_path)
    for day in ("Monday", "Wednesday", "Friday"):
        session = local.session(f"{day.lower()}-conv")
        for text in SCRIPT[day]:
            await local.say(session, text)
        assert await session.flush_memory(timeout=30), session.last_memory_error

    history = {b.content: b for b in await (await local.memory.engine()).history("user-1")}
    assert history["Lives in New York City"].status == "superseded"
    assert history["Lives in San Francisco"].status == "active"
    # The move ended the New York rent; Friday still sees it, as Monday's words.
    assert history["Pays $2,400 a month in rent"].status == "invalidated"
    friday = local.answer_prompts()[-1]
    assert SCRIPT["Friday"][0] in friday
    assert "San Francisco" in friday and "2,400" in friday
    assert set(server.paths()) == {"chat"}  # never /v1/responses, never /v1/embeddings
    await local.aclose()
