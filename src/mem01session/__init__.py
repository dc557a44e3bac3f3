"""mem01session: two-tier memory for OpenAI Agents SDK sessions.

``Mem01Session`` keeps the transcript of one conversation in an SDK session and durable,
versioned beliefs about the user in PostgreSQL + pgvector; ``session.run_config()``
injects what is remembered into each model call without storing it. ``Memory`` is the
application object the sessions of one application share, and the door to what it
remembers (its verbs: beliefs, episodes, history, recall, remember, correct, forget,
erase). The record types are in :mod:`mem01session.memory.records`; the belief engine,
for what the verbs do not cover, is ``await memory.engine()``.

Errors are in :mod:`mem01session.errors`, embedders in :mod:`mem01session.embeddings`,
extractors in :mod:`mem01session.extraction`, short-term sessions in
:mod:`mem01session.shortterm`.

The public names are imported on first use (PEP 562), so that ``import mem01session.cli``
(the command line) does not load the Agents SDK, SQLAlchemy or psycopg before it needs to.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._lazy import lazy_names

if TYPE_CHECKING:
    from .config import Settings
    from .errors import Mem01Error
    from .memory import Memory
    from .memory.records import (
        ApplyResult,
        Belief,
        Episode,
        EraseReceipt,
        LedgerEvent,
        Op,
        Provenance,
        RecallResult,
        Source,
    )
    from .session import Mem01Session
    from .tools import memory_tools

__version__ = "0.2.0.dev0"

# Each public name and the module that defines it (relative to this package).
_HOMES = {
    "ApplyResult": ".memory.records",
    "Belief": ".memory.records",
    "Episode": ".memory.records",
    "EraseReceipt": ".memory.records",
    "LedgerEvent": ".memory.records",
    "Mem01Error": ".errors",
    "Mem01Session": ".session",
    "Memory": ".memory",
    "Op": ".memory.records",
    "Provenance": ".memory.records",
    "RecallResult": ".memory.records",
    "Settings": ".config",
    "Source": ".memory.records",
    "memory_tools": ".tools",
}

__all__ = [
    "ApplyResult",
    "Belief",
    "Episode",
    "EraseReceipt",
    "LedgerEvent",
    "Mem01Error",
    "Mem01Session",
    "Memory",
    "Op",
    "Provenance",
    "RecallResult",
    "Settings",
    "Source",
    "memory_tools",
]


__getattr__, __dir__ = lazy_names(__name__, _HOMES, globals())
