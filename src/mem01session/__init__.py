"""mem01session: two-tier memory for OpenAI Agents SDK sessions.

``Mem01Session`` keeps the transcript of one conversation in an SDK session and durable,
versioned beliefs about the user in PostgreSQL + pgvector; ``session.run_config()``
injects what is remembered into each model call without storing it. ``Memory`` is the
application object the sessions of one application share.

Errors are in :mod:`mem01session.errors`, embedders in :mod:`mem01session.embeddings`,
extractors in :mod:`mem01session.extraction`, short-term sessions in
:mod:`mem01session.shortterm`.
"""

from .config import Settings
from .engine import (
    ApplyResult,
    Belief,
    BeliefEngine,
    EraseReceipt,
    LedgerEvent,
    Op,
    Provenance,
    RecallRequest,
    RecallResult,
    Source,
)
from .errors import Mem01Error
from .memory import Memory
from .session import Mem01Session

__version__ = "0.2.0.dev0"

__all__ = [
    "ApplyResult",
    "Belief",
    "BeliefEngine",
    "EraseReceipt",
    "LedgerEvent",
    "Mem01Error",
    "Mem01Session",
    "Memory",
    "Op",
    "Provenance",
    "RecallRequest",
    "RecallResult",
    "Settings",
    "Source",
]
