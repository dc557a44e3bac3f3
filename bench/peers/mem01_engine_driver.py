"""Drives mem01-engine (``mem01`` package) with its PostgreSQL store and precomputed vectors.

No LLM is involved: beliefs are written with ``apply_ops`` (``ADD`` ops, what its
extractor would emit) and read with ``MemoryClient.recall`` (which never calls the LLM;
a stub that raises stands in for the client's required ``llm``).
"""

from __future__ import annotations

import sys
from importlib import metadata
from typing import Any

from _loop import Vectors, serve, timed

STATE: dict[str, Any] = {}


class TableEmbedder:
    """mem01's Embedder protocol over the harness's vectors."""

    def __init__(self, vectors: Vectors) -> None:
        self.vectors = vectors

    @property
    def dimensions(self) -> int:
        return self.vectors.dim

    def embed(self, text: str) -> list[float]:
        return self.vectors.get(text)


class NoLLM:
    def complete(self, *args: Any, **kwargs: Any) -> str:
        raise RuntimeError("the benchmark never calls an LLM")


def setup(req: dict[str, Any]) -> dict[str, Any]:
    from mem01 import MemoryClient
    from mem01.store.postgres_store import PostgresBeliefStore

    vectors = Vectors(int(req["dim"]))
    store = PostgresBeliefStore(req["url"], embedding_dim=vectors.dim)
    embedder = TableEmbedder(vectors)
    client = MemoryClient(store=store, embedder=embedder, llm=NoLLM())  # type: ignore[arg-type]
    STATE.update(client=client, store=store, vectors=vectors, embedder=embedder)
    return {"version": metadata.version("mem01-engine")}


def add(req: dict[str, Any]) -> dict[str, Any]:
    from mem01 import BeliefOp, BeliefOpType, BeliefSource, ScopeIds
    from mem01.write.apply_ops import apply_ops

    total = 0.0
    for fact in req["facts"]:
        STATE["vectors"].remember(fact["text"].strip(), fact["vector"])
        op = BeliefOp(
            op=BeliefOpType.ADD,
            content=fact["text"],
            scope_ids=ScopeIds(user_id=req["user"]),
            metadata={"dia_ids": " ".join(fact["ids"]), "observed_at": fact.get("observed_at")},
        )
        result, ms = timed(
            lambda op=op: apply_ops(
                STATE["store"],
                [op],
                STATE["embedder"],
                default_source=BeliefSource.EXTRACTION,
                expected_user_id=req["user"],
            )
        )
        if result.errors:
            raise RuntimeError("; ".join(result.errors))
        total += ms
    return {"ms": total, "count": len(req["facts"])}


def _recall(user: str, query: str, vector: list[float], k: int, budget: int) -> Any:
    STATE["vectors"].remember(query.strip(), vector)
    return STATE["client"].recall(query, user_id=user, max_memory_tokens=budget, k=k)


def _items(packed: Any) -> list[dict[str, Any]]:
    return [
        {"text": b.content, "ids": str((b.metadata or {}).get("dia_ids") or "").split()}
        for b in packed.beliefs
    ]


def recall(req: dict[str, Any]) -> dict[str, Any]:
    """The ranking (``k`` results, no budget) and mem01-engine's own block at each budget,
    packed from the same ``k`` candidates."""
    args = (req["user"], req["query"], req["vector"])
    ranked, ms = timed(lambda: _recall(*args, k=req["k"], budget=10**6))
    blocks = {}
    for budget in req["budgets"]:
        packed = _recall(*args, k=req["k"], budget=budget)
        blocks[str(budget)] = {"items": _items(packed), "text": packed.text}
    return {"ms": ms, "items": _items(ranked), "blocks": blocks}


def latency(req: dict[str, Any]) -> dict[str, Any]:
    samples, returned = [], []
    for i, q in enumerate(req["queries"]):
        packed, ms = timed(
            lambda q=q: _recall(q["user"], q["query"], q["vector"], k=req["k"], budget=800)
        )
        if i >= req["warmup"]:
            samples.append(ms)
            returned.append(len(packed.beliefs))
    return {"ms": samples, "returned": returned}


if __name__ == "__main__":
    print("mem01-engine driver ready", file=sys.stderr)
    serve({"setup": setup, "add": add, "recall": recall, "latency": latency, "quit": lambda r: {}})
