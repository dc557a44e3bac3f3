"""Embedders: one small protocol, several implementations, and the automatic choice.

* :class:`~.openai_embedder.OpenAIEmbedder`: the OpenAI API or a compatible server;
* :class:`~.local.LocalEmbedder`: all-MiniLM-L6-v2 on torch (the ``local`` extra);
* :class:`~.hashing.HashingEmbedder`: deterministic feature hashing, no dependencies.
"""

from __future__ import annotations

import logging

from ..config import DEFAULT_OPENAI_EMBEDDING_MODEL, Settings
from ..errors import ConfigError
from ..logs import get_logger, notice_once
from .base import Embedder, Vector
from .hashing import HashingEmbedder
from .local import LocalEmbedder
from .openai_embedder import OpenAIEmbedder

log = get_logger(__name__)

__all__ = [
    "Embedder",
    "HashingEmbedder",
    "LocalEmbedder",
    "OpenAIEmbedder",
    "Vector",
    "default_embedder",
]


def default_embedder(settings: Settings, *, kind: str | None = None) -> Embedder:
    """Pick an embedder: ``kind`` ("openai", "local", "offline") or automatically.

    Automatic: OpenAI when ``OPENAI_API_KEY`` is set, else offline. The local model is
    used only when asked for (``kind="local"`` or ``MEM01_EMBEDDING_MODEL=all-MiniLM-L6-v2``)
    since loading torch costs seconds.
    """
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
        notice_once(
            log,
            f"embedder:{embedder.name}",
            logging.INFO,
            "embeddings: OpenAI %s (%d-d)",
            embedder.name,
            embedder.dim,
        )
    elif kind == "local":
        embedder = LocalEmbedder()
        notice_once(
            log,
            f"embedder:{embedder.name}",
            logging.INFO,
            "embeddings: local %s (%d-d)",
            embedder.name,
            embedder.dim,
        )
    elif kind == "offline":
        embedder = HashingEmbedder(settings.embedding_dim or 384)
        notice_once(
            log,
            f"embedder:{embedder.name}",
            logging.WARNING,
            "embeddings: offline feature hashing (%s); no OPENAI_API_KEY set. It matches "
            "words, not meaning.",
            embedder.name,
        )
    else:
        raise ConfigError(f"unknown embedder kind {kind!r}; use 'openai', 'local' or 'offline'")
    return embedder
