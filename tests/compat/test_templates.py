"""The memory placements against strict chat templates, on what the SDK really sends.

A run with the memory filter goes through the SDK's ``Runner`` and its Chat Completions
model (its converter makes the messages); the request body is captured at the HTTP
boundary and rendered through the templates of :mod:`tests.compat.templates`. The default
for Chat Completions (``user``) is the one placement that no template refuses and none
loses; ``system`` and ``instructions`` show why.
"""

from __future__ import annotations

import json
from typing import Any

import httpx2
import pytest
from agents import Agent, OpenAIChatCompletionsModel, Runner
from jinja2 import TemplateError
from openai import AsyncOpenAI

from mem01session.engine.render import FOOTER, HEADER
from mem01session.session.injection import memory_run_config
from tests.compat.templates import ALTERNATE, render

BLOCK = f'{HEADER}- #7 "Lives in Lisbon" (active since 2026-03-01)\n{FOOTER}'
HISTORY: list[Any] = [
    {"role": "user", "content": "Hi, I need help with my budget."},
    {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": "Sure, what is it?", "annotations": []}],
    },
    {"role": "user", "content": "Where do I live?"},
]


async def sent_messages(placement: str, *, as_parts: bool = False) -> list[dict[str, Any]]:
    """The messages the SDK sends for a run on HISTORY with the block placed (with
    ``as_parts``, the question is a list of text parts, as some applications send it)."""
    bodies: list[dict[str, Any]] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        bodies.append(json.loads(request.content))
        message = {"role": "assistant", "content": "Lisbon."}
        choice = {"index": 0, "finish_reason": "stop", "message": message}
        return httpx2.Response(
            200,
            json={
                "id": "c",
                "object": "chat.completion",
                "created": 0,
                "model": "m",
                "choices": [choice],
            },
        )

    async def recall(query: str) -> str:
        assert query.startswith("Where do I live?")  # the user's words, whatever the placement
        return BLOCK

    http = httpx2.AsyncClient(transport=httpx2.MockTransport(handler))
    client = AsyncOpenAI(api_key="sk-test-unused", base_url="http://local/v1", http_client=http)
    agent = Agent(
        name="a", instructions="Answer briefly.", model=OpenAIChatCompletionsModel("m", client)
    )
    config = memory_run_config(recall, placement=placement)
    history = list(HISTORY)
    if as_parts:
        history[-1] = {
            "role": "user",
            "content": [
                {"type": "input_text", "text": "Where do I live?  "},
                {"type": "input_text", "text": "And since when?"},
            ],
        }
    await Runner.run(agent, history, run_config=config)
    await http.aclose()
    (body,) = bodies
    return list(body["messages"])


@pytest.mark.parametrize("template", ["gemma", "mistral", "drops_system", "chatml"])
@pytest.mark.parametrize("as_parts", [False, True])
async def test_the_default_placement_passes_every_template_with_the_memory(
    template: str, as_parts: bool
) -> None:
    """The block reaches the prompt, before the question and apart from it, whatever the
    template does to whitespace: Gemma's trims every text part and joins them with
    nothing, so a block in a part of its own came out as ``</memory>Where do I live?``."""
    messages = await sent_messages("auto", as_parts=as_parts)
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    # Nothing user-derived reaches the model with the system's authority.
    assert "Lisbon" not in json.dumps([m for m in messages if m["role"] == "system"])
    content = messages[-1]["content"]
    if as_parts:  # the block goes into the first text part; the second is untouched
        assert content == [
            {"type": "text", "text": f"{BLOCK}\n\nWhere do I live?  "},
            {"type": "text", "text": "And since when?"},
        ]
    else:  # a string stays a string
        assert content == f"{BLOCK}\n\nWhere do I live?"
    prompt = render(template, messages)
    assert '"Lives in Lisbon"' in prompt and "Where do I live?" in prompt
    assert f"{FOOTER}\n\nWhere do I live?" in prompt  # a blank line between them
    # Even with every run of whitespace squeezed to one space, they stay apart.
    assert f"{FOOTER} Where do I live?" in " ".join(prompt.split())


@pytest.mark.parametrize(
    ("placement", "template", "outcome"),
    [
        ("system", "gemma", "raises"),
        ("system", "mistral", "raises"),
        ("system", "drops_system", "lost"),
        ("system", "chatml", "kept"),
        ("instructions", "gemma", "kept"),
        ("instructions", "mistral", "kept"),
        ("instructions", "drops_system", "lost"),
        ("user", "gemma", "kept"),
        ("user", "mistral", "kept"),
        ("user", "drops_system", "kept"),
    ],
)
async def test_what_each_placement_does_to_each_template(
    placement: str, template: str, outcome: str
) -> None:
    messages = await sent_messages(placement)
    if outcome == "raises":
        with pytest.raises(TemplateError, match=ALTERNATE.replace(".", r"\.")):
            render(template, messages)
        return
    prompt = render(template, messages)
    assert ("Lives in Lisbon" in prompt) is (outcome == "kept")
    assert "Where do I live?" in prompt
    assert ("Answer briefly." in prompt) is (template != "drops_system")
