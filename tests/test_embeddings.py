"""Embedders: the offline fallback, the OpenAI client at the HTTP boundary, the choice."""

from __future__ import annotations

import json
import logging
import math

import httpx2
import pytest

from mem01session import Settings
from mem01session.embeddings import HashingEmbedder, OpenAIEmbedder, default_embedder
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


def test_choice_is_automatic_logged_and_explicit(
    caplog: pytest.LogCaptureFixture, fresh_notices: None
) -> None:
    caplog.set_level(logging.INFO)
    assert isinstance(default_embedder(Settings()), HashingEmbedder)
    assert "offline" in caplog.text
    caplog.clear()
    default_embedder(Settings())
    assert "offline" not in caplog.text  # said once per process, not per engine
    keyed = Settings(openai_api_key="sk-test-unused-1111")
    assert isinstance(default_embedder(keyed), OpenAIEmbedder)
    assert isinstance(default_embedder(keyed, kind="offline"), HashingEmbedder)
    assert default_embedder(Settings(embedding_dim=64)).dim == 64
    with pytest.raises(ConfigError, match="unknown embedder kind"):
        default_embedder(Settings(), kind="magic")


async def test_local_embedder_when_the_extra_is_installed() -> None:
    pytest.importorskip("sentence_transformers", reason="the `local` extra is not installed")
    emb = default_embedder(Settings(embedding_model="all-MiniLM-L6-v2"))
    home, question, other = await emb.embed(
        ["Lives in San Francisco", "Which city does the user live in?", "Owns a red bicycle"]
    )
    assert emb.dim == len(home) == 384
    assert cosine(home, question) > cosine(home, other)
