"""Drives mem0 (``mem0ai``) with its pgvector store, no LLM and precomputed vectors.

Setup quirks handled here: mem0 builds OpenAI clients at construction, so a dummy key is
set (the clients are never called: ``add(..., infer=False)`` skips the LLM, and the
embedder is replaced by a table of the harness's vectors); telemetry is off; the history
SQLite file lives in the scratch folder.
"""

from __future__ import annotations

import os
import sys
from importlib import metadata
from typing import Any

from _loop import Vectors, serve, timed

os.environ.setdefault("OPENAI_API_KEY", "sk-dummy-never-called")
os.environ["MEM0_TELEMETRY"] = "False"

STATE: dict[str, Any] = {}


class TableEmbedder:
    """Stands in for mem0's embedding model: returns the harness's vectors."""

    def __init__(self, vectors: Vectors) -> None:
        self.vectors = vectors

    def embed(self, text: str, memory_action: str | None = None) -> list[float]:
        return self.vectors.get(text)

    def embed_batch(self, texts: list[str], memory_action: str | None = None) -> list[list[float]]:
        return [self.vectors.get(t) for t in texts]


def setup(req: dict[str, Any]) -> dict[str, Any]:
    os.environ["MEM0_DIR"] = os.path.join(req["workdir"], "mem0")
    from mem0 import Memory

    dim = int(req["dim"])
    config = {
        "vector_store": {
            "provider": "pgvector",
            "config": {
                "connection_string": req["url"],
                "collection_name": "mem0",
                "embedding_model_dims": dim,
            },
        },
        "embedder": {"provider": "openai", "config": {"embedding_dims": dim}},
        "llm": {"provider": "openai", "config": {}},
        "history_db_path": os.path.join(req["workdir"], "mem0-history.db"),
    }
    memory = Memory.from_config(config)
    memory.vector_store._ensure_collection()  # created lazily otherwise; the harness COPYs into it
    vectors = Vectors(dim)
    memory.embedding_model = TableEmbedder(vectors)
    STATE.update(memory=memory, vectors=vectors)
    return {"version": metadata.version("mem0ai")}


def add(req: dict[str, Any]) -> dict[str, Any]:
    memory, vectors = STATE["memory"], STATE["vectors"]
    total = 0.0
    for fact in req["facts"]:
        vectors.remember(fact["text"], fact["vector"])
        meta = {"dia_ids": " ".join(fact["ids"]), "observed_at": fact.get("observed_at")}
        messages = [{"role": "user", "content": fact["text"]}]
        _, ms = timed(
            lambda m=messages, md=meta: memory.add(m, user_id=req["user"], metadata=md, infer=False)
        )
        total += ms
    return {"ms": total, "count": len(req["facts"])}


def _search(user: str, query: str, vector: list[float], k: int) -> list[dict[str, Any]]:
    STATE["vectors"].remember(query, vector)
    found = STATE["memory"].search(query, top_k=k, filters={"user_id": user})
    return found["results"] if isinstance(found, dict) else found


def recall(req: dict[str, Any]) -> dict[str, Any]:
    items, ms = timed(lambda: _search(req["user"], req["query"], req["vector"], req["k"]))
    return {
        "ms": ms,
        "items": [
            {"text": r["memory"], "ids": ((r.get("metadata") or {}).get("dia_ids") or "").split()}
            for r in items
        ],
    }


def latency(req: dict[str, Any]) -> dict[str, Any]:
    samples, returned = [], []
    for i, q in enumerate(req["queries"]):
        items, ms = timed(lambda q=q: _search(q["user"], q["query"], q["vector"], req["k"]))
        if i >= req["warmup"]:
            samples.append(ms)
            returned.append(len(items))
    return {"ms": samples, "returned": returned}


if __name__ == "__main__":
    print("mem0 driver ready", file=sys.stderr)
    serve({"setup": setup, "add": add, "recall": recall, "latency": latency, "quit": lambda r: {}})
