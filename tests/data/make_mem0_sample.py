"""Writes ``mem0_get_all.json``: what the real mem0 package's ``Memory.get_all`` returns for
two users, the file ``tests/memory/test_mem0_import.py`` imports.

Run in the benchmarks' peer venv (``bash bench/setup_peers.sh``), against a PostgreSQL
with pgvector (an empty database; mem0 makes its table)::

    bench/.peers/venv/bin/python tests/data/make_mem0_sample.py postgresql://... out.json

mem0 is run as it stores memories without its LLM (``infer=False``); its embedder is a
stand-in (a hash of the words: no model to download), which changes nothing in what
``get_all`` returns.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile

os.environ.setdefault("OPENAI_API_KEY", "sk-dummy-never-called")
os.environ["MEM0_TELEMETRY"] = "False"
DIM = 32

MEMORIES = {
    "alice": [
        ("Lives in Lisbon", {"topic": "home"}, "chat-1"),
        ("Is allergic to peanuts", {"topic": "health"}, "chat-1"),
        ("Prefers window seats on flights", None, "chat-2"),
        ("Has a dog named Biscuit", {"topic": "pets"}, None),
    ],
    "bob": [
        ("Works as a nurse in Porto", None, "b-1"),
        ("Is learning the cello", {"topic": "hobbies"}, "b-1"),
    ],
}


class HashEmbedder:
    def embed(self, text: str, memory_action: str | None = None) -> list[float]:
        digest = hashlib.sha256(text.encode()).digest()
        return [b / 255.0 for b in digest[:DIM]]

    def embed_batch(self, texts: list[str], memory_action: str | None = None) -> list[list[float]]:
        return [self.embed(t) for t in texts]


def main(url: str, out: str) -> None:
    folder = tempfile.mkdtemp(prefix="mem0-sample-")
    os.environ["MEM0_DIR"] = folder
    from mem0 import Memory

    config = {
        "vector_store": {
            "provider": "pgvector",
            "config": {
                "connection_string": url,
                "collection_name": "mem0",
                "embedding_model_dims": DIM,
            },
        },
        "embedder": {"provider": "openai", "config": {"embedding_dims": DIM}},
        "history_db_path": os.path.join(folder, "history.db"),
    }
    memory = Memory.from_config(config)
    memory.embedding_model = HashEmbedder()
    for user, said in MEMORIES.items():
        for text, meta, run in said:
            extra = {"run_id": run} if run else {}
            memory.add(
                [{"role": "user", "content": text}],
                user_id=user,
                metadata=meta,
                infer=False,
                **extra,
            )
    every = []
    for user in MEMORIES:
        every += memory.get_all(filters={"user_id": user})["results"]
    with open(out, "w") as file:
        json.dump({"results": every}, file, indent=1, sort_keys=True)
        file.write("\n")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
