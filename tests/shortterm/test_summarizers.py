"""The OpenAI summarizer at the HTTP boundary (httpx2.MockTransport) and the offline one."""

from __future__ import annotations

import json
from typing import Any

import httpx2 as httpx
import pytest
from agents import SQLiteSession
from openai import AsyncOpenAI

from mem01session.shortterm import OfflineSummarizer, OpenAISummarizer, SummarizingSession
from mem01session.shortterm.summarizers import load_prompt
from tests.shortterm.helpers import lookup, turn, user_texts


def completion(text: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": text},
            }
        ],
    }


def client_for(handler: Any) -> AsyncOpenAI:
    transport = httpx.MockTransport(handler)
    return AsyncOpenAI(
        api_key="sk-test",
        base_url="http://llm.test/v1",
        http_client=httpx.AsyncClient(transport=transport),
        max_retries=0,
    )


def test_prompt_ships_in_its_own_file() -> None:
    prompt = load_prompt()
    assert "summary" in prompt.lower() and "Do not invent" in prompt


async def test_openai_summarizer_in_a_summarizing_session(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEM01_LLM_MODEL", "summary-model")
    requests: list[dict[str, Any]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        assert request.url.path == "/v1/chat/completions"
        requests.append(json.loads(request.content))
        return httpx.Response(200, json=completion("The user asked about the weather."))

    summarizer = OpenAISummarizer(client=client_for(handler))
    assert summarizer.model == "summary-model"
    session = SummarizingSession(
        SQLiteSession("s"), keep_last_n_turns=1, context_limit=1, summarizer=summarizer
    )
    await turn(session, "weather in Paris?", tool=lookup, call_id="c1")
    await turn(session, "thanks")  # 2 turns > 1: summarized when this input is stored
    model = await turn(session, "bye")

    assert len(requests) == 2  # storing "thanks" and storing "bye" each exceeded the limit
    body = requests[0]
    assert body["model"] == "summary-model"
    system, user = body["messages"]
    assert system == {"role": "system", "content": load_prompt()}
    assert "User: weather in Paris?" in user["content"]
    assert "Tool call: lookup" in user["content"]
    assert "Tool result: result for weather in Paris?" in user["content"]
    assert user_texts(model.calls[0].input)[0] == "Summarize the conversation so far."
    assert model.calls[0].input[1]["content"] == "The user asked about the weather."
    assert user_texts(model.calls[0].input)[1:] == ["thanks", "bye"]


async def test_openai_summarizer_errors_are_fail_open() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(500, json={"error": {"message": "boom"}})

    session = SummarizingSession(
        SQLiteSession("s"),
        keep_last_n_turns=0,
        context_limit=1,
        summarizer=OpenAISummarizer("m", client=client_for(handler)),
    )
    await turn(session, "q1")
    model = await turn(session, "q2")
    assert user_texts(model.calls[0].input) == ["q1", "q2"]
    assert session.last_error is not None


async def test_empty_completion_is_an_error() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json=completion("  "))

    with pytest.raises(RuntimeError, match="empty summary"):
        await OpenAISummarizer("m", client=client_for(handler)).summarize(
            [{"role": "user", "content": "hi"}]
        )


async def test_offline_summarizer_is_deterministic_and_bounded() -> None:
    items: list[Any] = [
        {"role": "user", "content": f"statement number {n} " + "y" * 300} for n in range(50)
    ]
    summarizer = OfflineSummarizer(max_chars_per_item=50, max_chars=500)
    first = await summarizer.summarize(items)
    assert first == await summarizer.summarize(items)
    assert len(first) < 700
    assert "statement number 49" in first and "older lines omitted" in first
    assert "statement number 0 " not in first
    with pytest.raises(ValueError):
        OfflineSummarizer(max_chars=0)
