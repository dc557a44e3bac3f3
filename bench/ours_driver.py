"""The latency benchmark's driver for this project: ``BeliefEngine.recall`` timed in a
process of its own, as each peer's search is in its driver, so that no system's figures
carry the harness's heap (the loaded rows and their vectors) into its garbage collector.

Speaks the peers' JSON-lines protocol (:mod:`bench.peers._loop`); started by
:class:`bench.peer_client.Peer` with this interpreter.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any

from mem01session import Memory
from mem01session.embeddings import Vector
from mem01session.engine import RecallRequest

from .common import open_memory
from .peers._loop import Vectors, serve
from .synthetic import NOW


class _QueryVectors:
    """The query vectors the harness sent, under the model name the rows were stored with."""

    def __init__(self, name: str, vectors: Vectors) -> None:
        self._name = name
        self.vectors = vectors

    @property
    def name(self) -> str:
        return self._name

    @property
    def dim(self) -> int:
        return self.vectors.dim

    async def embed(self, texts: Sequence[str]) -> list[Vector]:
        return [self.vectors.get(t) for t in texts]


class _Driver:
    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.memory: Memory | None = None
        self.embedder: _QueryVectors | None = None

    def setup(self, req: dict[str, Any]) -> dict[str, Any]:
        self.embedder = _QueryVectors(req["model"], Vectors(req["dim"]))
        self.memory = self.loop.run_until_complete(
            open_memory(req["url"], self.embedder, clock=lambda: NOW)
        )
        return {}

    def latency(self, req: dict[str, Any]) -> dict[str, Any]:
        assert self.embedder is not None
        for q in req["queries"]:
            self.embedder.vectors.remember(q["query"], q["vector"])
        return self.loop.run_until_complete(self._time(req))

    async def _time(self, req: dict[str, Any]) -> dict[str, Any]:
        assert self.memory is not None
        engine = await self.memory.engine()
        samples, returned = [], []
        for i, q in enumerate(req["queries"]):
            request = RecallRequest(q["query"], max_tokens=req["max_tokens"])
            started = time.perf_counter()
            result = await engine.recall(q["user"], request)
            if i >= req["warmup"]:
                samples.append((time.perf_counter() - started) * 1000.0)
                returned.append(len(result.beliefs))
        return {"ms": samples, "returned": returned}

    def quit(self, _req: dict[str, Any]) -> dict[str, Any]:
        if self.memory is not None:
            self.loop.run_until_complete(self.memory.aclose())
        self.loop.close()
        return {}


if __name__ == "__main__":
    driver = _Driver()
    serve(
        {
            "setup": driver.setup,
            "latency": driver.latency,
            "quit": driver.quit,
        }
    )
