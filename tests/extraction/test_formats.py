"""The extractor degrades instead of dying: json_schema -> json_object -> plain text.

Servers refuse structured outputs with 400, 422 or 500 (llama.cpp's Python server answers
500 "Input should be 'text' or 'json_object'"); each refusal moves the extractor one step
down at once, without spending retries, and the step that worked is remembered.
"""

from __future__ import annotations

import json
import logging

import httpx2
import pytest

from mem01session import Settings
from mem01session.errors import ConfigError, ExtractionError
from mem01session.extraction.answer import OP_SCHEMA, read_json
from tests.extraction.test_openai_extractor import (
    CANDIDATES,
    NOW,
    SETTINGS,
    TURN,
    FakeServer,
    completion,
    error,
    good,
)

EMPTY = '{"ops": []}'


def pydantic_500() -> httpx2.Response:
    """What llama-cpp-python's server answered to response_format json_schema."""
    detail = [
        {
            "type": "literal_error",
            "loc": ["body", "response_format", "type"],
            "msg": "Input should be 'text' or 'json_object'",
            "input": "json_schema",
        }
    ]
    return httpx2.Response(500, json={"error": {"message": str(detail), "type": "server_error"}})


def formats(server: FakeServer) -> list[str | None]:
    return [(r.get("response_format") or {}).get("type") for r in server.requests]


async def test_a_500_refusing_json_schema_falls_back_at_once_and_is_remembered(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="mem01session")
    server = FakeServer(pydantic_500(), good(), completion(EMPTY))
    extractor = server.extractor()
    first = await extractor.extract(TURN, CANDIDATES, NOW)
    await extractor.extract(TURN, CANDIDATES, NOW)

    assert [o.content for o in first.ops] == ["Lives in San Francisco"]
    assert formats(server) == ["json_schema", "json_object", "json_object"]
    assert server.sleeps == []  # no retry was spent on it
    assert server.requests[1]["response_format"]["schema"] == OP_SCHEMA  # llama.cpp's field
    assert '"additionalProperties"' in server.requests[1]["messages"][0]["content"]
    assert "json mode" in first.notes[0]
    (warning,) = [r.getMessage() for r in caplog.records if "falling back" in r.getMessage()]
    assert "HTTP 500" in warning and "JSON mode" in warning


async def test_a_bare_422_to_json_schema_falls_back() -> None:
    server = FakeServer(error(422, "Unprocessable Entity"), good())
    await server.extractor().extract(TURN, CANDIDATES, NOW)
    assert formats(server) == ["json_schema", "json_object"]


async def test_a_404_about_the_model_is_not_a_format_refusal() -> None:
    server = FakeServer(error(404, "model 'gemma3' not found, try pulling it first"))
    with pytest.raises(ExtractionError, match="HTTP 404") as info:
        await server.extractor().extract(TURN, CANDIDATES, NOW)
    assert formats(server) == ["json_schema"]
    assert info.value.retryable is False


async def test_plain_text_is_the_last_step_and_is_read_tolerantly() -> None:
    answer = json.loads(good().content)["choices"][0]["message"]["content"]
    chatty = completion(f"Sure! Here is what I found: {answer}\nHope this helps.")
    server = FakeServer(
        pydantic_500(), error(400, "response_format is not supported"), chatty, completion(EMPTY)
    )
    extractor = server.extractor()
    first = await extractor.extract(TURN, CANDIDATES, NOW)
    await extractor.extract(TURN, CANDIDATES, NOW)

    assert [o.content for o in first.ops] == ["Lives in San Francisco"]
    assert formats(server) == ["json_schema", "json_object", None, None]
    assert "plain text" in first.notes[0]
    assert "no prose" in server.requests[2]["messages"][0]["content"]


async def test_a_refusal_in_plain_text_mode_is_an_error_not_a_loop() -> None:
    refusal = error(400, "response_format is not supported")
    server = FakeServer(refusal, refusal, refusal)
    with pytest.raises(ExtractionError, match="rejected the request"):
        await server.extractor().extract(TURN, CANDIDATES, NOW)
    assert formats(server) == ["json_schema", "json_object", None]


async def test_a_real_server_error_is_still_retried() -> None:
    server = FakeServer(error(500, "CUDA out of memory"), good())
    await server.extractor(backoff=0.5).extract(TURN, CANDIDATES, NOW)
    assert formats(server) == ["json_schema", "json_schema"]
    assert server.sleeps == [0.5]


async def test_a_server_error_that_only_mentions_a_schema_is_retried_not_remembered() -> None:
    crash = error(500, "internal error: upstream worker crashed while loading the schema cache")
    server = FakeServer(crash, good(), completion(EMPTY))
    extractor = server.extractor(backoff=0.5)
    await extractor.extract(TURN, CANDIDATES, NOW)
    await extractor.extract(TURN, CANDIDATES, NOW)
    assert formats(server) == ["json_schema", "json_schema", "json_schema"]
    assert server.sleeps == [0.5]  # retried as the server error it is


async def test_max_tokens_is_always_sent_and_configurable() -> None:
    server = FakeServer(completion(EMPTY), completion(EMPTY))
    await server.extractor().extract(TURN, CANDIDATES, NOW)
    await server.extractor(max_tokens=77).extract(TURN, CANDIDATES, NOW)
    assert [r["max_tokens"] for r in server.requests] == [1024, 77]


async def test_max_completion_tokens_when_the_server_asks_for_it() -> None:
    unsupported = error(
        400,
        "Unsupported parameter: 'max_tokens' is not supported with this model. "
        "Use 'max_completion_tokens' instead.",
    )
    server = FakeServer(unsupported, completion(EMPTY), completion(EMPTY))
    extractor = server.extractor()
    await extractor.extract(TURN, CANDIDATES, NOW)
    await extractor.extract(TURN, CANDIDATES, NOW)
    assert ["max_tokens" in r for r in server.requests] == [True, False, False]
    assert [r.get("max_completion_tokens") for r in server.requests[1:]] == [1024, 1024]
    assert formats(server) == ["json_schema"] * 3  # not mistaken for a format refusal


async def test_a_cut_off_answer_names_the_setting() -> None:
    server = FakeServer(completion('{"ops": [', finish="length"))
    with pytest.raises(ExtractionError, match="MEM01_LLM_MAX_TOKENS"):
        await server.extractor().extract(TURN, CANDIDATES, NOW)


def test_timeout_and_max_tokens_come_from_the_settings() -> None:
    settings = Settings.from_env(
        {"OPENAI_API_KEY": "sk-x", "MEM01_LLM_TIMEOUT": "7.5", "MEM01_LLM_MAX_TOKENS": "300"}
    )
    assert (settings.llm_timeout, settings.llm_max_tokens) == (7.5, 300)
    assert FakeServer().extractor().timeout == SETTINGS.llm_timeout == 60.0
    assert FakeServer().extractor(timeout=3).timeout == 3


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("MEM01_LLM_MAX_TOKENS", "lots"),
        ("MEM01_LLM_MAX_TOKENS", "0"),
        ("MEM01_LLM_TIMEOUT", "-1"),
        ("MEM01_LLM_TIMEOUT", "nan"),
        ("MEM01_OPENAI_API", "completions"),
        ("MEM01_MEMORY_PLACEMENT", "assistant"),
    ],
)
def test_bad_settings_name_the_variable(variable: str, value: str) -> None:
    with pytest.raises(ConfigError, match=variable):
        Settings.from_env({variable: value})


@pytest.mark.parametrize(
    ("env", "api"),
    [
        ({}, "responses"),
        ({"OPENAI_BASE_URL": "https://api.openai.com/v1"}, "responses"),
        ({"OPENAI_BASE_URL": "http://127.0.0.1:8765/v1"}, "chat"),
        (
            {"OPENAI_BASE_URL": "http://localhost:11434/v1", "MEM01_OPENAI_API": "responses"},
            "responses",
        ),
        ({"MEM01_OPENAI_API": "CHAT"}, "chat"),
    ],
)
def test_the_answering_api_follows_the_base_url(env: dict[str, str], api: str) -> None:
    assert Settings.from_env(env).model_api == api


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ('{"ops": []}', {"ops": []}),
        ('```json\n{"ops": []}\n```', {"ops": []}),
        ('Here you go: {"ops": []} -- done', {"ops": []}),
        ('I think {not json} but {"ops": [1]}', {"ops": [1]}),
        ("[]", []),
    ],
)
def test_read_json_finds_the_object(text: str, value: object) -> None:
    assert read_json(text) == value


def test_read_json_without_an_object_says_so() -> None:
    with pytest.raises(ExtractionError, match="not valid JSON"):
        read_json("I could not find anything durable.")


async def test_a_refusal_said_only_in_the_body_is_quoted(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="mem01session")
    detail = {"detail": [{"loc": ["body", "response_format"], "msg": "Input should be 'text'"}]}
    server = FakeServer(httpx2.Response(422, json=detail), good())
    await server.extractor().extract(TURN, CANDIDATES, NOW)
    (warning,) = [r.getMessage() for r in caplog.records if "falling back" in r.getMessage()]
    assert "HTTP 422: Error code: 422 - {'detail'" in warning and "Input should be" in warning
