"""Drives mem0 (``mem0ai``) with its pgvector store and precomputed vectors: raw messages
(``infer=False``, no LLM), or its real LLM pipeline (``infer=True``) against the chat
server the harness names at setup (the benchmark's replaying server, or a real model
behind it).

Setup quirks handled here: mem0 builds OpenAI clients at construction, so a dummy key is
set (without an LLM server named, the clients are never called); the embedder is replaced
by a table of the harness's vectors; telemetry is off; the history SQLite file lives in
the scratch folder.
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
        "llm": {"provider": "openai", "config": _llm(req.get("llm"))},
        "history_db_path": os.path.join(req["workdir"], "mem0-history.db"),
    }
    memory = Memory.from_config(config)
    memory.vector_store._ensure_collection()  # created lazily otherwise; the harness COPYs into it
    vectors = Vectors(dim)
    memory.embedding_model = TableEmbedder(vectors)
    STATE.update(memory=memory, vectors=vectors)
    return {"version": metadata.version("mem0ai")}


def _llm(llm: dict[str, Any] | None) -> dict[str, Any]:
    """mem0's LLM settings: the chat server the harness names (none: never called)."""
    if not llm:
        return {}
    return {"model": llm["model"], "openai_base_url": llm["url"], "api_key": llm["api_key"]}


def _add_one(user: str, text: str, vector: list[float], meta: dict[str, Any]) -> float:
    """One user message stored verbatim (``infer=False``: no LLM); its time in ms."""
    memory = STATE["memory"]
    STATE["vectors"].remember(text, vector)
    messages = [{"role": "user", "content": text}]
    _, ms = timed(lambda: memory.add(messages, user_id=user, metadata=meta, infer=False))
    return ms


def add(req: dict[str, Any]) -> dict[str, Any]:
    total = 0.0
    for fact in req["facts"]:
        meta = {"dia_ids": " ".join(fact["ids"]), "observed_at": fact.get("observed_at")}
        total += _add_one(req["user"], fact["text"], fact["vector"], meta)
    return {"ms": total, "count": len(req["facts"])}


def add_turns(req: dict[str, Any]) -> dict[str, Any]:
    """Dialogue turns, each a message of its speaker's user, its dia_id in the metadata."""
    total = 0.0
    for turn in req["turns"]:
        meta = {
            "dia_ids": turn["dia_id"],
            "speaker": turn["speaker"],
            "observed_at": turn["observed_at"],
        }
        total += _add_one(turn["user"], turn["text"], turn["vector"], meta)
    return {"ms": total, "count": len(req["turns"])}


def add_exchanges(req: dict[str, Any]) -> dict[str, Any]:
    """Exchanges of a chat, each added after it happened as a chat app adds them: the
    user's message and the reply, through mem0's LLM pipeline (``infer=True``); the user's
    turn (its dia_id) in the metadata. The vectors of every text mem0 will embed come with
    them."""
    memory = STATE["memory"]
    total, stored = 0.0, 0
    for exchange in req["exchanges"]:
        for text, vector in exchange["vectors"].items():
            STATE["vectors"].remember(text, vector)
        meta = {"dia_ids": exchange["dia_id"], "observed_at": exchange["observed_at"]}
        result, ms = timed(
            lambda e=exchange, m=meta: memory.add(e["messages"], user_id=e["user"], metadata=m)
        )
        total += ms
        stored += len(result.get("results") or [])
    return {"ms": total, "stored": stored}


def events(_req: dict[str, Any]) -> dict[str, Any]:
    """How many of each event mem0's history recorded (ADD, UPDATE, DELETE)."""
    rows = (
        STATE["memory"]
        .db.connection.execute("SELECT event, count(*) FROM history GROUP BY event")
        .fetchall()
    )
    return {"events": {str(event): int(n) for event, n in rows}}


def count(req: dict[str, Any]) -> dict[str, Any]:
    """How many memories each user holds."""
    out = {}
    for user in req["users"]:
        found = STATE["memory"].get_all(filters={"user_id": user}, top_k=1_000_000)
        out[user] = len(found["results"] if isinstance(found, dict) else found)
    return {"counts": out}


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
    serve(
        {
            "setup": setup,
            "add": add,
            "add_turns": add_turns,
            "add_exchanges": add_exchanges,
            "events": events,
            "count": count,
            "recall": recall,
            "latency": latency,
            "quit": lambda r: {},
        }
    )
