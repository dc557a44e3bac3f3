"""The durable queue: turns on their way to extraction.

:mod:`.turns` (what a job carries), :mod:`.buffer` (turns held in memory until their
answer, or while the database is away), :mod:`.jobs` (the job table, every statement on
it), :mod:`.worker` (job -> extractor -> engine) and :mod:`.extractor` (what the worker
asks of an extractor).
"""

from .extractor import Candidate, Extraction, Extractor
from .job_records import Job, JobProgress
from .jobs import JobStore
from .turns import Turn, TurnMessage
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
