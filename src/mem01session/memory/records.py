"""The record types ``Memory``'s verbs take and return, in one place: what applications
and the surfaces (command line, browser, tools, MCP server) import.

Each is a frozen dataclass defined where it is made (the engine's records and ops, the
job table's rows); importing them from here needs neither SQLAlchemy nor a database.
"""

from __future__ import annotations

from ..engine.ops import MAX_CONTENT_CHARS, MAX_KEY_CHARS, Op, Provenance
from ..engine.portable.report import ImportReport, Restored
from ..engine.records import (
    DEFAULT_MAX_TOKENS,
    ApplyResult,
    Belief,
    BlockProvenance,
    Change,
    Episode,
    EraseReceipt,
    LedgerEvent,
    RecallRequest,
    RecallResult,
    ReembedReport,
    ScoredBelief,
    ScoredEpisode,
    Source,
    UserSummary,
)
from ..queue.job_records import Job, JobCounts

__all__ = [
    "DEFAULT_MAX_TOKENS",
    "MAX_CONTENT_CHARS",
    "MAX_KEY_CHARS",
    "ApplyResult",
    "Belief",
    "BlockProvenance",
    "Change",
    "Episode",
    "EraseReceipt",
    "ImportReport",
    "Job",
    "JobCounts",
    "LedgerEvent",
    "Op",
    "Provenance",
    "RecallRequest",
    "RecallResult",
    "ReembedReport",
    "Restored",
    "ScoredBelief",
    "ScoredEpisode",
    "Source",
    "UserSummary",
]
