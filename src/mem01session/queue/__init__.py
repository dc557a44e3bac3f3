"""The durable queue: turns on their way to extraction.

:mod:`.turns` (what a job carries), :mod:`.buffer` (turns held in memory until their
answer, or while the database is away), :mod:`.jobs` (the job table's statements),
:mod:`.progress` (what is left of a user's queue, as the conversations read it) and
:mod:`.worker` (job -> extractor -> engine). What the worker asks of an
extractor, and what a turn is, live in :mod:`mem01session.extraction.base`; they are
named here too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_names

if TYPE_CHECKING:
    from ..extraction.base import Candidate, Extraction, Extractor, Turn, TurnMessage
    from .job_records import Job, JobProgress
    from .job_store import JobStore
    from .policy import WorkerPolicy
    from .worker import MemoryWorker

# Each public name and its module, imported on first use (PEP 562): ``job_records``
# (what ``mem01session jobs list`` shows) loads without the worker and the engine.
_HOMES = {
    "Candidate": "..extraction.base",
    "Extraction": "..extraction.base",
    "Extractor": "..extraction.base",
    "Job": ".job_records",
    "JobProgress": ".job_records",
    "JobStore": ".job_store",
    "MemoryWorker": ".worker",
    "Turn": "..extraction.base",
    "TurnMessage": "..extraction.base",
    "WorkerPolicy": ".policy",
}

__all__ = [
    "Candidate",
    "Extraction",
    "Extractor",
    "Job",
    "JobProgress",
    "JobStore",
    "MemoryWorker",
    "Turn",
    "TurnMessage",
    "WorkerPolicy",
]


__getattr__, __dir__ = lazy_names(__name__, _HOMES, globals())
