"""The application's memory, and the one door to it.

:class:`Memory` (:mod:`.memory`) owns what every session shares and answers the verbs an
application, the command line, the browser, the tools and the MCP server use: users,
beliefs, episodes, history, jobs, recall, remember/correct/forget, erase/reinstate.
:mod:`.records` holds the types they take and return, :mod:`.reader` the reads without
the engine (:class:`MemoryReader`), :mod:`.ranking` the weights recall ranks with,
:mod:`.admin` the operator's schema and embedded-server calls. :mod:`.runtime` is what
the sessions use of a memory (their ``SessionHost``); :mod:`.attached` keeps the sessions
a memory flushes when it closes.

The names are imported on first use (PEP 562): a reader loads no SQLAlchemy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_names

if TYPE_CHECKING:
    from ..queue import WorkerPolicy
    from .memory import Memory, host_of
    from .reader import MemoryReader, MemoryReads, reading

_HOMES = {
    "Memory": ".memory",
    "MemoryReader": ".reader",
    "MemoryReads": ".reader",
    "WorkerPolicy": "..queue",
    "host_of": ".memory",
    "reading": ".reader",
}

__all__ = ["Memory", "MemoryReader", "MemoryReads", "WorkerPolicy", "host_of", "reading"]

__getattr__, __dir__ = lazy_names(__name__, _HOMES, globals())
