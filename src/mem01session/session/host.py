"""What a session needs of the memory it belongs to: the session layer's own view of a
``Memory``, whose runtime (:func:`mem01session.memory.host_of`) provides it."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from ..engine import BeliefEngine
from ..memory.attached import Attached
from ..queue import JobStore, MemoryWorker


class SessionHost(Protocol):
    """The engine, the worker and the flush-at-close bookkeeping of one memory."""

    @property
    def run_worker(self) -> bool:
        """Whether this process extracts the turns it records (False: a worker elsewhere)."""
        ...

    @property
    def closed(self) -> bool: ...

    def now(self) -> datetime:
        """The memory's clock, time-zone aware."""
        ...

    async def engine(self) -> BeliefEngine: ...

    async def ready(self) -> BeliefEngine:
        """The engine, with the worker started and what every run needs loaded."""
        ...

    async def worker(self) -> MemoryWorker: ...

    async def jobs(self) -> JobStore: ...

    async def turns_queued(self, after: float = 0.0) -> None:
        """Turns were just queued: wake the worker (``after`` seconds from now)."""
        ...

    def attach(self, session: Attached) -> None: ...

    def hold(self, session: Attached, holding: bool) -> None: ...

    def detach(self, session: Attached) -> None: ...

    def left_behind(self, user_id: str, job_ids: Sequence[int]) -> None: ...

    def close_in_background(self) -> None: ...


__all__ = ["SessionHost"]
