"""Embedders: feature hashing, the OpenAI client at the HTTP boundary, the choice."""

from __future__ import annotations

import json
import logging
import math
import re
from collections.abc import Callable

import httpx2
import pytest

from mem01session import Settings
from mem01session.embeddings import (
    HashingEmbedder,
    MiniLMEmbedder,
    OpenAIEmbedder,
    default_embedder,
)
from mem01session.errors import ConfigError


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


async def test_offline_embedder_is_deterministic_and_normalized() -> None:
    emb = HashingEmbedder(128)
    first, again, other = await emb.embed(
        ["Lives in San Francisco", "Lives in San Francisco", "Allergic to peanuts"]
    )
    assert first == again
    assert math.isclose(math.sqrt(sum(x * x for x in first)), 1.0, rel_tol=1e-9)
    related = (await emb.embed(["I moved to San Francisco"]))[0]
    assert cosine(first, related) > cosine(first, other)
    assert emb.name == "mem01-offline-hash-v1-128" and len(first) == 128
    assert (await emb.embed([""]))[0][0] == 1.0  # empty text still gets a unit vector


def test_offline_embedder_rejects_tiny_dimensions() -> None:
    with pytest.raises(ConfigError, match="dim"):
        HashingEmbedder(2)


async def test_openai_embedder_batches_and_keeps_order() -> None:
    seen: list[dict[str, object]] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        seen.append(body)
        data = [
            {"object": "embedding", "index": i, "embedding": [float(i), 1.0]}
            for i in range(len(body["input"]))
        ][::-1]  # out of order on purpose
        return httpx2.Response(
            200,
            json={
                "object": "list",
                "data": data,
                "model": body["model"],
                "usage": {"prompt_tokens": 1, "total_tokens": 1},
            },
        )

    from openai import AsyncOpenAI

    client = AsyncOpenAI(
        api_key="sk-test-unused-0000",
        http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(handler)),
    )
    emb = OpenAIEmbedder("text-embedding-3-small", dim=2, client=client, batch_size=2)
    vectors = await emb.embed(["a", "b", "c"])
    assert vectors == [[0.0, 1.0], [1.0, 1.0], [0.0, 1.0]]
    assert [len(b["input"]) for b in seen] == [2, 1]  # type: ignore[arg-type]
    assert all(b["dimensions"] == 2 for b in seen)


def test_the_choice_follows_the_model_name_and_is_logged_once(
    caplog: pytest.LogCaptureFixture, fresh_notices: None
) -> None:
    caplog.set_level(logging.INFO)
    for settings in (Settings(), Settings(openai_api_key="sk-test-unused-1111")):
        assert isinstance(default_embedder(settings), MiniLMEmbedder)  # key or not
    assert caplog.text.count("all-MiniLM-L6-v2") == 1  # said once per process
    hashing = default_embedder(Settings(embedding_model="mem01-offline-hash-v1-64"))
    assert isinstance(hashing, HashingEmbedder) and hashing.dim == 64
    keyed = Settings(openai_api_key="sk-test-unused-1111", embedding_model="text-embedding-3-small")
    assert isinstance(default_embedder(keyed), OpenAIEmbedder)


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        (Settings(embedding_model="text-embedding-3-small"), "OPENAI_API_KEY"),
        (Settings(embedding_model="nomic-embed-text"), "MEM01_EMBEDDING_BASE_URL"),
        (Settings(embedding_model="mem01-offline-hash-v1-lots"), "ends with its dimension"),
        # more than a vector column holds: every recall and job failed on it, later
        (Settings(embedding_model="mem01-offline-hash-v1-99999999"), "from 8 to 16000"),
    ],
)
def test_a_model_that_cannot_be_served_is_a_clear_error(
    settings: Settings, message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(ConfigError, match=message):
        default_embedder(settings)
    # Where an application meets it: making its Memory, or a session with a memory of its
    # own, not at its first run (which failed with the conversation under way).
    from agents import SQLiteSession

    from mem01session import Mem01Session, Memory

    with pytest.raises(ConfigError, match=message):
        Memory(settings)
    monkeypatch.setattr(Settings, "from_env", classmethod(lambda cls, environ=None: settings))
    with pytest.raises(ConfigError, match=message):
        Mem01Session("c", "u", inner=SQLiteSession("c"))
    # An embedder given is the application's choice: the setting is not read.
    assert Memory(settings, embedder=HashingEmbedder(8)).closed is False


def test_a_compatible_server_serves_other_models() -> None:
    settings = Settings(
        embedding_model="nomic-embed-text",
        embedding_base_url="http://127.0.0.1:11434/v1",
        embedding_dim=768,
    )
    emb = default_embedder(settings)
    assert isinstance(emb, OpenAIEmbedder) and emb.name == "nomic-embed-text" and emb.dim == 768


def _server(status: int, body: object) -> OpenAIEmbedder:
    from openai import AsyncOpenAI

    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(status, json=body)

    client = AsyncOpenAI(
        api_key="sk-test-unused-0000",
        base_url="http://127.0.0.1:9/v1",
        max_retries=0,
        http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(handler)),
    )
    return OpenAIEmbedder("local-embed", dim=3, client=client, base_url="http://127.0.0.1:9/v1")


def _data(*embeddings: object) -> dict[str, object]:
    return {
        "object": "list",
        "model": "local-embed",
        "data": [
            {"object": "embedding", "index": i, "embedding": e} for i, e in enumerate(embeddings)
        ],
    }


@pytest.mark.parametrize(
    ("status", "body", "message"),
    [
        (200, _data([[0.1, 0.2, 0.3]] * 5), "a list of 5 vectors of 3 numbers per text"),
        (200, _data([0.1, 0.2, 0.3], [0.1, 0.2, 0.3]), "2 vectors for 1 texts"),
        (200, _data([0.1, 0.2]), "returned 2-d vectors .* MEM01_EMBEDDING_DIM=2"),
        (200, _data(["x", "y", "z"]), "something other than numbers"),
        (500, {"error": {"message": "Llama model must be created with embedding=True"}}, "500"),
    ],
)
async def test_a_server_answer_that_is_not_one_vector_per_text_is_a_clear_error(
    status: int, body: object, message: str
) -> None:
    from mem01session.errors import EmbeddingError

    with pytest.raises(EmbeddingError, match=message) as info:
        await _server(status, body).embed(["Lives in Lisbon"])
    assert "127.0.0.1:9" in str(info.value) and "local-embed" in str(info.value)
    assert "sk-test" not in str(info.value)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: HashingEmbedder("64"), "HashingEmbedder dim must be an integer from 8 to 16000"),
        (lambda: HashingEmbedder(True), "HashingEmbedder dim must be an integer from 8 to 16000"),
        (lambda: MiniLMEmbedder(model_path=5), "model_path must be a path (str or Path), got 5"),
        (lambda: MiniLMEmbedder(own_process="no"), "own_process must be True or False"),
        (lambda: MiniLMEmbedder(verify_sha256="no"), "verify_sha256 must be True or False"),
        (lambda: OpenAIEmbedder("text-embedding-3-small", dim=-1), "dim must be a positive"),
        (lambda: OpenAIEmbedder("", base_url="http://127.0.0.1:9/v1"), "model must be a model"),
        (lambda: OpenAIEmbedder("e", batch_size=0, base_url="http://x/v1"), "batch_size must be"),
    ],
)
def test_an_embedder_argument_of_the_wrong_kind_is_refused_by_name(
    make: Callable[[], object], message: str
) -> None:
    """Each raised a TypeError from deep inside, or (a negative dimension, a flag given as
    "no") was accepted and failed later or meant the opposite."""
    with pytest.raises(ConfigError, match=re.escape(message)):
        make()
