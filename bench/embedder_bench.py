"""Micro-benchmark of the local embedder (all-MiniLM-L6-v2 int8 ONNX); prints JSON.

    python -m bench.embedder_bench [--queries 200] [--sentences 384] [--rounds 3]
                                   [--locomo PATH] [--shapes]

(``python -m bench embedder`` runs it in a fresh process and writes its section of
docs/benchmarks.md.)

Measures, in this order, in one fresh process, the model loaded in it
(``own_process=False``: what the embedding process itself holds and does; by default the
library runs the model in such a process of its own):

* first load: importing the module, hashing the model file, building the onnxruntime
  session and the tokenizer; and the process RSS (VmRSS) before and after it;
* query latency (p50/p95, warm) of ``await embed([query])``, one query at a time, with 1
  and 2 intra-op threads, and for comparison the same call forced through
  ``asyncio.to_thread`` (against the embedder's own query lane);
* ingest throughput (sentences/s, wall clock) of ``await embed(sentences)`` by batch size
  (1, 8, 32, 64; the default 1,024-token budget per batch also applies) and intra-op
  threads (1, 2), texts grouped by length; plus two concurrent callers with one thread
  each (how a server with several users uses the two cores); and the process CPU time
  per sentence, which other load on the machine disturbs less than the wall clock;
* RSS with one model loaded after that work, and peak RSS (VmHWM, two models) at the end;
* the cost of an empty ``asyncio.to_thread`` round trip;
* with ``--shapes``: CPU time per token and process RSS by batch shape (rows x tokens),
  the figures behind the embedder's batching defaults (run last: it grows the arena).

Each timed figure is the best of ``--rounds`` rounds.

The texts are generated here from templates (deterministic), or taken from a LoCoMo
conversation file with ``--locomo`` (its observation facts and QA questions). Other
processes on the machine disturb the figures: run it on an idle machine, and more than
once.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import statistics
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def _proc_status(field: str) -> float:
    """A memory field of /proc/self/status, in MiB (0 where /proc is missing)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return 0.0


_PEOPLE = ["sister", "brother", "mother", "father", "partner", "best friend", "manager", "son"]
_THINGS = [
    "job", "dog", "cat", "apartment", "car", "diet", "allergies", "garden", "novel",
    "marathon training", "vacation plans", "guitar lessons", "dentist appointment",
]  # fmt: skip
_PLACES = ["Lisbon", "Toronto", "San Francisco", "Osaka", "Nairobi", "Rotterdam", "Denver"]
_QUERY_TEMPLATES = [
    "What did I tell you about my {thing}?",
    "Where does my {person} live?",
    "Do I have a {pet}?",
    "When is my {person}'s birthday?",
    "What am I allergic to?",
    "Remind me what I said about {place} last week.",
    "Have I mentioned my {thing} before?",
    "Can you suggest something for my {person}, given what you know about them?",
    "what was the name of my {pet}",
    "Summarize everything you remember about my {thing} and my plans in {place}.",
]
_FACT_TEMPLATES = [
    "Has a {pet} named {name}.",
    "Lives in {place}.",
    "The user's {person} lives in {place} and works as a {job}.",
    "Is training for a half marathon and runs three times a week before work.",
    "Started a new job as a {job} in {place} in {month}.",
    "Mentioned that their {thing} has been stressful lately because of long hours.",
    "Prefers vegetarian food and cannot stand coriander.",
    "Is planning a trip to {place} with their {person} in {month} to celebrate a birthday.",
    "Adopted a {pet} called {name} from a shelter last spring; it is shy with strangers "
    "but loves long walks in the park near their apartment in {place}.",
    "{name} is the name of the user's {person}, who is learning the guitar and plays in a "
    "small band on weekends; the user wants to surprise {name} with concert tickets in "
    "{month}, but has not decided between two shows in {place}.",
]
_PETS = ["dog", "cat", "beagle", "parrot", "rabbit", "turtle"]
_NAMES = ["Max", "Biscuit", "Luna", "Pieter", "Aylin", "Joost", "Mira", "Sam"]
_JOBS = ["nurse", "data engineer", "teacher", "chef", "architect", "lawyer"]
_MONTHS = ["March", "June", "September", "December"]


def _fill(template: str, rng: random.Random) -> str:
    return template.format(
        thing=rng.choice(_THINGS),
        person=rng.choice(_PEOPLE),
        pet=rng.choice(_PETS),
        place=rng.choice(_PLACES),
        name=rng.choice(_NAMES),
        job=rng.choice(_JOBS),
        month=rng.choice(_MONTHS),
    )


def _texts(n_queries: int, n_sentences: int, locomo: Path | None) -> tuple[list[str], list[str]]:
    rng = random.Random(26)
    if locomo is not None:
        conv = json.loads(locomo.read_text())
        facts = [
            str(fact[0])
            for key, value in conv.items()
            if key.endswith("_observation")
            for per_speaker in value.values()
            for fact in per_speaker
        ]
        questions = [str(q["question"]) for q in conv.get("qa", [])]
        queries = [questions[i % len(questions)] for i in range(n_queries)]
        sentences = [facts[i % len(facts)] for i in range(n_sentences)]
        return queries, sentences
    queries = [_fill(_QUERY_TEMPLATES[i % len(_QUERY_TEMPLATES)], rng) for i in range(n_queries)]
    sentences = [_fill(_FACT_TEMPLATES[i % len(_FACT_TEMPLATES)], rng) for i in range(n_sentences)]
    rng.shuffle(sentences)
    return queries, sentences


def _pct(samples: Sequence[float], q: float) -> float:
    ordered = sorted(samples)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000, 2)


async def _query_latency(
    embedder: Any, queries: list[str], *, thread: bool, rounds: int
) -> dict[str, float]:
    for q in queries[:20]:  # warm-up
        await embedder.embed([q])
    best: dict[str, float] = {}
    for _ in range(rounds):
        samples = []
        for q in queries:
            start = time.perf_counter()
            if thread:
                await asyncio.to_thread(embedder.embed_sync, [q])
            else:
                await embedder.embed([q])
            samples.append(time.perf_counter() - start)
        got = {
            "p50_ms": _pct(samples, 0.50),
            "p95_ms": _pct(samples, 0.95),
            "mean_ms": round(statistics.fmean(samples) * 1000, 2),
        }
        if not best or got["p50_ms"] < best["p50_ms"]:
            best = got
    return best


async def _hop_us() -> float:
    """p50 of an empty round trip through asyncio.to_thread (the default executor)."""
    samples = []
    for _ in range(500):
        start = time.perf_counter()
        await asyncio.to_thread(int)
        samples.append(time.perf_counter() - start)
    return round(statistics.median(samples) * 1e6, 1)


async def _ingest(
    embedder: Any, sentences: list[str], *, rounds: int, callers: int = 1
) -> dict[str, float]:
    await embedder.embed(sentences[:16])  # warm-up
    chunks = [sentences[i::callers] for i in range(callers)]
    best_wall = best_cpu = float("inf")
    for _ in range(rounds):
        wall, cpu = time.perf_counter(), time.process_time()
        await asyncio.gather(*(embedder.embed(chunk) for chunk in chunks))
        best_wall = min(best_wall, time.perf_counter() - wall)
        best_cpu = min(best_cpu, time.process_time() - cpu)
    return {
        "sentences_per_s": round(len(sentences) / best_wall, 1),
        "cpu_ms_per_sentence": round(best_cpu * 1000 / len(sentences), 2),
    }


def _shapes(embedder: Any, rounds: int) -> list[dict[str, float]]:
    """CPU per token and RSS by batch shape, smallest activation footprint first."""
    import numpy as np

    from mem01session.embeddings.minilm import embedder as minilm
    from mem01session.embeddings.minilm import model as minilm_model

    runtime = minilm_model.runtime(embedder._key)
    shapes = [(b, n) for n in (16, 32, 64, 128, 256) for b in (1, 4, 8, 16, 32, 64)]
    shapes = sorted((s for s in shapes if s[0] * s[1] <= 8192), key=lambda s: s[0] * s[1] ** 2)
    rows = []
    for b, n in shapes:
        ids = [np.full(n, 2000, dtype=np.int64) for _ in range(b)]
        minilm._run_batch(runtime, ids)
        best = float("inf")
        for _ in range(max(rounds, 3)):
            cpu = time.process_time()
            minilm._run_batch(runtime, ids)
            best = min(best, time.process_time() - cpu)
        rows.append(
            {
                "rows": b,
                "tokens": n,
                "cpu_us_per_token": round(best * 1e6 / (b * n), 1),
                "cpu_ms_per_row": round(best * 1000 / b, 2),
                "rss_mib": _proc_status("VmRSS"),
            }
        )
    return rows


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--sentences", type=int, default=384)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--locomo", type=Path, default=None)
    parser.add_argument("--shapes", action="store_true")
    args = parser.parse_args()
    queries, sentences = _texts(args.queries, args.sentences, args.locomo)

    rss_before = _proc_status("VmRSS")
    start = time.perf_counter()
    from mem01session.embeddings.minilm.embedder import MiniLMEmbedder

    import_s = time.perf_counter() - start
    first = MiniLMEmbedder(intra_op_threads=1, recent_texts=0, own_process=False)
    load_s = first.load()
    first_load_s = time.perf_counter() - start
    rss_after_load = _proc_status("VmRSS")
    from mem01session.embeddings.minilm import embedder as minilm
    from mem01session.embeddings.minilm import model as minilm_model

    tokenizer = minilm_model.runtime(first._key).tokenizer
    query_tokens = [len(tokenizer.encode(q).ids) for q in queries]
    sentence_tokens = [len(tokenizer.encode(s).ids) for s in sentences]

    report: dict[str, Any] = {
        "machine": {
            "cpus": os.cpu_count(),
            "processor": platform.processor() or platform.machine(),
            "loadavg_at_start": os.getloadavg(),
        },
        "texts": {
            "source": str(args.locomo) if args.locomo else "templates",
            "queries": len(queries),
            "query_mean_tokens": round(statistics.fmean(query_tokens), 1),
            "queries_on_the_query_lane": sum(len(q) <= minilm._LANE_MAX_CHARS for q in queries),
            "sentences": len(sentences),
            "sentence_mean_tokens": round(statistics.fmean(sentence_tokens), 1),
            "sentence_max_tokens": max(sentence_tokens),
        },
        "first_load": {
            "import_s": round(import_s, 3),
            "load_s": round(load_s, 3),
            "total_s": round(first_load_s, 3),
            "rss_before_mib": rss_before,
            "rss_after_load_mib": rss_after_load,
        },
        "query": {},
        "ingest": {},
    }

    ingest = report["ingest"]
    for threads in (1, 2):
        emb = MiniLMEmbedder(intra_op_threads=threads, recent_texts=0, own_process=False)
        emb.load()
        for via, thread in (("", False), ("_via_to_thread", True)):
            report["query"][f"threads_{threads}{via}"] = await _query_latency(
                emb, queries, thread=thread, rounds=args.rounds
            )
        for batch in (1, 8, 32, 64):
            emb = MiniLMEmbedder(
                intra_op_threads=threads, batch_size=batch, recent_texts=0, own_process=False
            )
            got = await _ingest(emb, sentences, rounds=args.rounds)
            ingest[f"threads_{threads}_batch_{batch}"] = got
        if threads == 1:
            for batch in (8, 32):
                emb = MiniLMEmbedder(
                    intra_op_threads=1, batch_size=batch, recent_texts=0, own_process=False
                )
                got = await _ingest(emb, sentences, rounds=args.rounds, callers=2)
                ingest[f"two_callers_threads_1_batch_{batch}"] = got
            # one model loaded, after queries and ingest batches (the arena has grown)
            report["rss_after_threads_1_work_mib"] = _proc_status("VmRSS")
    report["query"]["to_thread_hop_p50_us"] = await _hop_us()

    report["rss_peak_mib"] = _proc_status("VmHWM")
    report["rss_end_mib"] = _proc_status("VmRSS")
    if args.shapes:
        report["shapes_threads_1"] = _shapes(first, args.rounds)
    report["machine"]["loadavg_at_end"] = os.getloadavg()
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    asyncio.run(main())
