"""The floor of ``python -m bench load``: the same scenario with every run's recall
computing nothing, so that what is left of the added latency is everything else memory
does (the enqueue, the session's work around the SDK's) and what the machine's other work
costs the runs.

:class:`FreeRecall` reads each user's block once, for real; every later recall of that
user waits :data:`FREE_RECALL_SECONDS` (a read's wall time on an idle machine) and returns
that block again: no embedding, no statement, no ranking, no rendering, on any process.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, Final, TypeVar

from mem01session import Memory, Settings
from mem01session.db import Database, migrate
from mem01session.embeddings import Embedder
from mem01session.engine import BeliefEngine, RecallRequest, RecallResult
from mem01session.engine.read import SnapshotProbe
from mem01session.extraction import RuleExtractor

from .common import scratch

T = TypeVar("T")

FREE_RECALL_SECONDS: Final = 0.010


class FreeRecall(BeliefEngine):
    """A :class:`BeliefEngine` whose recalls after a user's first cost no CPU."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._first: dict[str, tuple[RecallResult, Any]] = {}

    async def recall_probed(
        self, user_id: str, request: RecallRequest, probe: SnapshotProbe[T]
    ) -> tuple[RecallResult, T]:
        first = self._first.get(user_id)
        if first is None:
            first = self._first[user_id] = await super().recall_probed(user_id, request, probe)
        else:
            await asyncio.sleep(FREE_RECALL_SECONDS)
        return first


async def open_free_recall(url: str, embedder: Embedder, *, run_worker: bool) -> Memory:
    """:func:`bench.common.open_memory`'s memory on a :class:`FreeRecall` engine (its
    database is the caller's to close, after the memory)."""
    migrate.upgrade(url, embedding_dim=embedder.dim, embedding_model=embedder.name)
    db = await Database.open(url, embedding_model=embedder.name, embedding_dim=embedder.dim)
    home = Path(scratch())
    return Memory(
        Settings(database_url=url, home=home),
        engine=FreeRecall(db, embedder),
        extractor=RuleExtractor(),
        run_worker=run_worker,
    )
