"""The durable queue: turns on their way to extraction.

:mod:`.turns` (what a job carries), :mod:`.buffer` (turns held in memory until their
answer, or while the database is away), :mod:`.jobs` (the job table, every statement on
it), :mod:`.worker` (job -> extractor -> engine) and :mod:`.extractor` (what the worker
asks of an extractor).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .extractor import Candidate, Extraction, Extractor
    from .job_records import Job, JobProgress
    from .jobs import JobStore
    from .turns import Turn, TurnMessage
    from .worker import MemoryWorker, WorkerPolicy

# Each public name and its module, imported on first use (PEP 562): ``job_records``
# (what ``mem01session jobs list`` shows) loads without the worker and the engine.
_HOMES = {
    "Candidate": ".extractor",
    "Extraction": ".extractor",
    "Extractor": ".extractor",
    "Job": ".job_records",
    "JobProgress": ".job_records",
    "JobStore": ".jobs",
    "MemoryWorker": ".worker",
    "Turn": ".turns",
    "TurnMessage": ".turns",
    "WorkerPolicy": ".worker",
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


def __getattr__(name: str) -> Any:
    """Import a public name on first use and keep it as a module attribute."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(home, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
