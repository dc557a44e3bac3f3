"""Embedders: one small protocol, three implementations, and the choice between them.

* :class:`~.minilm.MiniLMEmbedder`, the default: all-MiniLM-L6-v2 (int8 ONNX) on the CPU,
  with or without an API key. Semantic recall offline, no network round trip and no cost
  per query, and the same vectors on every machine.
* :class:`~.openai_embedder.OpenAIEmbedder`: the OpenAI API or any compatible server, when
  ``MEM01_EMBEDDING_MODEL`` names a model the library does not run itself.
* :class:`~.hashing.HashingEmbedder`: deterministic feature hashing (words, not meaning),
  only when asked for by name.
"""

from __future__ import annotations

import logging

from ..config import Settings
from ..errors import ConfigError
from ..logs import get_logger, notice_once
from .base import Embedder, Vector
from .hashing import HASHING_PREFIX, HashingEmbedder
from .minilm.embedder import MiniLMEmbedder
from .minilm.model import MODEL_NAME as MINILM
from .openai_embedder import OpenAIEmbedder

log = get_logger(__name__)

__all__ = [
    "Embedder",
    "HashingEmbedder",
    "MiniLMEmbedder",
    "OpenAIEmbedder",
    "Vector",
    "check_embedding_settings",
    "default_embedder",
]

# Models of the OpenAI API: served at the chat base URL unless told otherwise.
_OPENAI_PREFIX = "text-embedding-"


def check_embedding_settings(settings: Settings) -> None:
    """Raise :class:`ConfigError` when ``settings`` name an embedder that cannot be made
    (:func:`default_embedder` would fail): checked when a ``Memory`` is made, not at the
    first run."""
    model = settings.embedding_model or MINILM
    if model == MINILM:
        return
    if model.startswith(HASHING_PREFIX):
        HashingEmbedder.from_name(model)
        return
    base_url = settings.embedding_base_url
    if base_url is None and model.startswith(_OPENAI_PREFIX):
        base_url = settings.openai_base_url
    if base_url is None and not model.startswith(_OPENAI_PREFIX):
        raise ConfigError(
            f"MEM01_EMBEDDING_MODEL names {model!r}, which is neither all-MiniLM-L6-v2 "
            "(run locally) nor an OpenAI model: set MEM01_EMBEDDING_BASE_URL to the "
            "OpenAI-compatible server that serves it"
        )
    if base_url is None and not settings.openai_api_key:
        raise ConfigError(
            f"the embedding model {model!r} is OpenAI's: set OPENAI_API_KEY, or unset "
            "MEM01_EMBEDDING_MODEL to embed locally with all-MiniLM-L6-v2"
        )


def default_embedder(settings: Settings) -> Embedder:
    """The embedder ``settings`` name (``MEM01_EMBEDDING_MODEL``), MiniLM by default.

    ``all-MiniLM-L6-v2`` (the default) runs here; ``mem01-offline-hash-v1-<dim>`` is the
    hashing embedder; any other name is a model of an OpenAI-compatible server:
    ``MEM01_EMBEDDING_BASE_URL``, which defaults to ``OPENAI_BASE_URL`` only for OpenAI's
    own models (``text-embedding-*``). Which one was chosen is logged once per process.
    """
    check_embedding_settings(settings)
    model = settings.embedding_model or MINILM
    if model == MINILM:
        embedder: Embedder = MiniLMEmbedder(
            model_path=settings.embedding_model_path,
            verify_sha256=settings.embedding_model_verify,
            own_process=settings.embedding_process,
        )
        where = "local, onnxruntime" + (
            " in a process of its own" if settings.embedding_process else ""
        )
    elif model.startswith(HASHING_PREFIX):
        embedder = HashingEmbedder.from_name(model)
        where = "feature hashing: it matches words, not meaning"
    else:
        base_url = settings.embedding_base_url
        if base_url is None:  # an OpenAI model (checked above)
            base_url = settings.openai_base_url
        embedder = OpenAIEmbedder(
            model,
            dim=settings.embedding_dim,
            api_key=settings.openai_api_key,
            base_url=base_url,
        )
        where = f"server {base_url or 'api.openai.com'}"
    notice_once(
        log,
        f"embedder:{embedder.name}",
        logging.INFO,
        "embeddings: %s (%d-d, %s)",
        embedder.name,
        embedder.dim,
        where,
    )
    return embedder
