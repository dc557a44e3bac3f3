"""The durable queue: turns on their way to extraction.

:mod:`.turns` (what a job carries), :mod:`.buffer` (turns held in memory until their
answer, or while the database is away), :mod:`.jobs` (the job table, every statement on
it) and :mod:`.worker` (job -> extractor -> engine). What the worker asks of an
extractor, and what a turn is, live in :mod:`mem01session.extraction.base`; they are
named here too.
"""

from ..extraction.base import Candidate, Extraction, Extractor, Turn, TurnMessage
from .job_records import Job, JobProgress
from .jobs import JobStore
from .worker import MemoryWorker, WorkerPolicy

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
