"""mem01session: two-tier memory for OpenAI Agents SDK sessions.

``Mem01Session`` keeps the transcript of one conversation in an SDK session and durable,
versioned beliefs about the user in PostgreSQL + pgvector; ``session.run_config()``
injects what is remembered into each model call without storing it.
"""

from .config import Settings
from .db import Database
from .embeddings import Embedder, LocalEmbedder, OfflineEmbedder, OpenAIEmbedder, default_embedder
from .engine import BeliefEngine
from .errors import (
    BeliefNotFoundError,
    ConfigError,
    DatabaseError,
    ExtractionError,
    InvalidOpError,
    Mem01Error,
    Mem01MemoryError,
    MigrationRequiredError,
    SchemaMismatchError,
    UserErasedError,
)
from .extraction import Extractor, OpenAIExtractor, RuleExtractor, default_extractor
from .offline_model import OfflineAnswerModel
from .ops import Op, Provenance
from .records import ApplyResult, Belief, EraseReceipt, LedgerEvent, RecallResult, Source
from .session import Mem01Session
from .tokens import TokenCounter, default_token_counter

__version__ = "0.2.0.dev0"

__all__ = [
    "ApplyResult",
    "Belief",
    "BeliefEngine",
    "BeliefNotFoundError",
    "ConfigError",
    "Database",
    "DatabaseError",
    "Embedder",
    "EraseReceipt",
    "ExtractionError",
    "Extractor",
    "InvalidOpError",
    "LedgerEvent",
    "LocalEmbedder",
    "Mem01Error",
    "Mem01MemoryError",
    "Mem01Session",
    "MigrationRequiredError",
    "OfflineAnswerModel",
    "OfflineEmbedder",
    "Op",
    "OpenAIEmbedder",
    "OpenAIExtractor",
    "Provenance",
    "RecallResult",
    "RuleExtractor",
    "SchemaMismatchError",
    "Settings",
    "Source",
    "TokenCounter",
    "UserErasedError",
    "default_embedder",
    "default_extractor",
    "default_token_counter",
]
