"""Embeddings from the OpenAI API or any compatible server.

A server's answer is checked before any vector is used: one vector per text, each a flat
list of numbers of the expected dimension. Anything else (llama.cpp without pooling
answers a list of vectors per text, one per token) is an :class:`EmbeddingError` that
names the shape the server sent.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..checks import check_model_options, check_positive_int
from ..config import DEFAULT_OPENAI_EMBEDDING_MODEL
from ..errors import ConfigError, EmbeddingError
from ..loops import PerLoop
from .base import Vector


class OpenAIEmbedder:
    """Embeddings from the OpenAI API (or any compatible server at ``OPENAI_BASE_URL``).

    Batches requests, retries 429/5xx with backoff (the client's own policy), and times
    out instead of hanging the write path. The client it makes is made once per event loop
    (recalls embed on the caller's loop, the worker on the memory's own); a client you
    give is used on every loop that embeds.
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

        if model is None:
            raise ConfigError("model must be a model name, got None")
        check_model_options(model, timeout, dim, max_retries, tokens_name="dim")
        check_positive_int("batch_size", batch_size)
        self._model = model
        self._dim = dim or _KNOWN_OPENAI_DIMS.get(model, 1536)
        self._send_dimensions = dim is not None
        self._batch_size = batch_size
        self._where = base_url or "the OpenAI API"
        if api_key is None and base_url is not None:
            api_key = "no-key"  # local servers (Ollama, vLLM, llama.cpp) take any key
        self._given = client
        self._clients: PerLoop[Any] = PerLoop(
            lambda: AsyncOpenAI(
                api_key=api_key, base_url=base_url, timeout=timeout, max_retries=max_retries
            ),
            AsyncOpenAI.close,
        )

    @property
    def _client(self) -> Any:
        """The client for the running loop."""
        return self._given if self._given is not None else self._clients.get()

    async def aclose(self) -> None:
        """Close the HTTP clients this embedder made (not one it was given)."""
        await self._clients.aclose()

    async def forget_loop(self) -> None:
        """The running loop is about to end: close the client made for it."""
        await self._clients.forget_loop()

    def __repr__(self) -> str:
        return f"OpenAIEmbedder(model={self._model!r}, dim={self._dim})"

    @property
    def name(self) -> str:
        return self._model

    @property
    def dim(self) -> int:
        return self._dim

    async def embed(self, texts: Sequence[str]) -> list[Vector]:
        import openai

        out: list[Vector] = []
        for start in range(0, len(texts), self._batch_size):
            batch = [t or " " for t in texts[start : start + self._batch_size]]
            kwargs: dict[str, Any] = {"model": self._model, "input": batch}
            if self._send_dimensions:
                kwargs["dimensions"] = self._dim
            try:
                response = await self._client.embeddings.create(**kwargs)
            except openai.APIStatusError as exc:
                message = " ".join(str(exc.message).split())[:300]
                raise EmbeddingError(
                    f"the embedding server ({self._where}) answered HTTP {exc.status_code} "
                    f"for model {self._model!r}: {message}"
                ) from None
            except ValueError as exc:  # the client's own check: "No embedding data received"
                raise self._shape_error(f"no vectors ({exc})") from None
            rows = sorted(response.data or [], key=lambda d: d.index)
            if len(rows) != len(batch):
                raise self._shape_error(f"{len(rows)} vectors for {len(batch)} texts")
            out.extend(self._vector(row.embedding) for row in rows)
        return out

    def _vector(self, value: object) -> Vector:
        """``value`` as one vector of :attr:`dim` numbers, or the error naming its shape."""
        if not isinstance(value, list):
            raise self._shape_error(f"a {type(value).__name__} per text, not a list of numbers")
        if value and isinstance(value[0], list):
            inner = len(value[0])
            raise self._shape_error(
                f"a list of {len(value)} vectors of {inner} numbers per text (one vector per "
                "token: pooling is off; llama.cpp's server needs --pooling mean)"
            )
        if not all(isinstance(x, int | float) and not isinstance(x, bool) for x in value):
            raise self._shape_error("a list holding something other than numbers")
        if len(value) != self._dim:
            raise EmbeddingError(
                f"the embedding server ({self._where}) returned {len(value)}-d vectors for "
                f"model {self._model!r}, but {self._dim}-d were expected: set "
                f"MEM01_EMBEDDING_DIM={len(value)}"
            )
        return [float(x) for x in value]

    def _shape_error(self, shape: str) -> EmbeddingError:
        return EmbeddingError(
            f"the embedding server ({self._where}) returned {shape} for model "
            f"{self._model!r}; it must return one vector per text"
        )


_KNOWN_OPENAI_DIMS = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}
