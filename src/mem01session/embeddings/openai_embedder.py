"""Embeddings from the OpenAI API or any compatible server."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..config import DEFAULT_OPENAI_EMBEDDING_MODEL
from .base import Vector


class OpenAIEmbedder:
    """Embeddings from the OpenAI API (or any compatible server at ``OPENAI_BASE_URL``).

    Batches requests, retries 429/5xx with backoff (the client's own policy), and times
    out instead of hanging the write path.
    """

    def __init__(
        self,
        model: str = DEFAULT_OPENAI_EMBEDDING_MODEL,
        *,
        dim: int | None = None,
        api_key: str | None = None,
        base_url: str | None = None,
        client: Any = None,
        batch_size: int = 256,
        timeout: float = 20.0,
        max_retries: int = 4,
    ) -> None:
        from openai import AsyncOpenAI

        self._model = model
        self._dim = dim or _KNOWN_OPENAI_DIMS.get(model, 1536)
        self._send_dimensions = dim is not None
        self._batch_size = batch_size
        if api_key is None and base_url is not None:
            api_key = "no-key"  # local servers (Ollama, vLLM, llama.cpp) take any key
        self._client = client or AsyncOpenAI(
            api_key=api_key, base_url=base_url, timeout=timeout, max_retries=max_retries
        )

    def __repr__(self) -> str:
        return f"OpenAIEmbedder(model={self._model!r}, dim={self._dim})"

    @property
    def name(self) -> str:
        return self._model

    @property
    def dim(self) -> int:
        return self._dim

    async def embed(self, texts: Sequence[str]) -> list[Vector]:
        out: list[Vector] = []
        for start in range(0, len(texts), self._batch_size):
            batch = [t or " " for t in texts[start : start + self._batch_size]]
            kwargs: dict[str, Any] = {"model": self._model, "input": batch}
            if self._send_dimensions:
                kwargs["dimensions"] = self._dim
            response = await self._client.embeddings.create(**kwargs)
            rows = sorted(response.data, key=lambda d: d.index)
            out.extend([list(map(float, r.embedding)) for r in rows])
        return out


_KNOWN_OPENAI_DIMS = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}
