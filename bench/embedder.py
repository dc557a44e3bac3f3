"""``python -m bench embedder``: the local embedder's figures, measured in a fresh process.

Runs :mod:`bench.embedder_bench` (first load, RSS, query latency, ingest throughput) as a
child process, so that its memory figures are the embedder's alone, and renders them.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from .peer_client import HERE

QUERY_TARGET_MS = 8.0
INGEST_TARGET = 150.0


def run(locomo: Path | None, rounds: int = 3) -> dict[str, Any]:
    args = [sys.executable, "-m", "bench.embedder_bench", "--rounds", str(rounds)]
    conv = locomo / "conv-26.json" if locomo is not None else None
    if conv is not None and conv.is_file():
        args += ["--locomo", str(conv)]
    out = subprocess.run(args, cwd=HERE.parent, capture_output=True, text=True, check=True).stdout
    report: dict[str, Any] = json.loads(out)
    return report


def table(r: dict[str, Any]) -> str:
    q, ing, texts, load = r["query"], r["ingest"], r["texts"], r["first_load"]
    rows = [
        "| measure | 1 intra-op thread | 2 intra-op threads |",
        "|---|---:|---:|",
        f"| query embedding p50 ms (target < {QUERY_TARGET_MS:.0f}) "
        f"| {q['threads_1']['p50_ms']:.2f} | {q['threads_2']['p50_ms']:.2f} |",
        f"| query embedding p95 ms | {q['threads_1']['p95_ms']:.2f} "
        f"| {q['threads_2']['p95_ms']:.2f} |",
    ]
    for batch in (1, 8, 32, 64):
        rows.append(
            f"| ingest sentences/s, batch {batch} (target > {INGEST_TARGET:.0f} with 2 threads) "
            f"| {ing[f'threads_1_batch_{batch}']['sentences_per_s']:.0f} "
            f"| {ing[f'threads_2_batch_{batch}']['sentences_per_s']:.0f} |"
        )
    two = ing.get("two_callers_threads_1_batch_32")
    extra = [
        "",
        "| once per process | |",
        "|---|---:|",
        f"| first load (import, sha256 check, onnxruntime session, tokenizer) s "
        f"| {load['total_s']:.2f} |",
        f"| process RSS before / after the first load MiB "
        f"| {load['rss_before_mib']:.0f} / {load['rss_after_load_mib']:.0f} |",
        f"| process RSS after the 1-thread queries and ingest MiB "
        f"| {r['rss_after_threads_1_work_mib']:.0f} |",
    ]
    if two is not None:
        extra.append(
            f"| ingest sentences/s, two callers at once, 1 thread each, batch 32 "
            f"| {two['sentences_per_s']:.0f} |"
        )
    note = (
        f"\n\nTexts: {texts['queries']} queries (mean {texts['query_mean_tokens']} tokens) and "
        f"{texts['sentences']} sentences (mean {texts['sentence_mean_tokens']} tokens) from "
        f"{Path(texts['source']).name}. Best of the rounds run; batches grouped by length; "
        "the model itself (the embedder's vectors of recent texts off: every round embeds "
        "again). "
        f"Load average at start {r['machine']['loadavg_at_start'][0]:.2f}. "
        f"An empty `asyncio.to_thread` round trip: {q['to_thread_hop_p50_us']} µs (p50)."
    )
    return "\n".join(rows + extra) + note
