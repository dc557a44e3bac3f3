"""mem01session: two-tier memory for OpenAI Agents SDK sessions."""

from .config import Settings
from .db import Database
from .embeddings import Embedder, LocalEmbedder, OfflineEmbedder, OpenAIEmbedder, default_embedder
from .errors import (
    BeliefNotFoundError,
    ConfigError,
    DatabaseError,
    InvalidOpError,
    Mem01Error,
    Mem01MemoryError,
    MigrationRequiredError,
    SchemaMismatchError,
    UserErasedError,
)

__version__ = "0.2.0.dev0"

__all__ = [
    "BeliefNotFoundError",
    "ConfigError",
    "Database",
    "DatabaseError",
    "Embedder",
    "InvalidOpError",
    "LocalEmbedder",
    "Mem01Error",
    "Mem01MemoryError",
    "MigrationRequiredError",
    "OfflineEmbedder",
    "OpenAIEmbedder",
    "SchemaMismatchError",
    "Settings",
    "UserErasedError",
    "default_embedder",
]
