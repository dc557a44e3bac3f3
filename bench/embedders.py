"""``python -m bench embedders``: this project's recall on LoCoMo with each embedder.

The same beliefs and questions as ``bench quality`` (conversation 26), ranked by this
project only, once per embedder: the default (all-MiniLM-L6-v2, int8 ONNX on
onnxruntime), the same model in fp32 on torch (its vectors read from
``bench/data/minilm-fp32-conv-26.npz``, written by ``bench/minilm_fidelity.py --save`` in a
throwaway torch virtualenv: torch never enters this project's environment), and feature
hashing (the offline fallback).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

import numpy as np

from mem01session.embeddings import HashingEmbedder, Vector

from .common import PrecomputedEmbedder, Server, open_memory
from .locomo import Conversation, load
from .metrics import Query, Summary
from .quality import (
    BUDGETS,
    SettableClock,
    evidence_of,
    load_ours,
    ours_answers,
    stripped,
    summaries,
)

FP32_VECTORS = Path(__file__).parent / "data" / "minilm-fp32-conv-26.npz"
FP32_NAME = "all-MiniLM-L6-v2-fp32-torch"


class StoredVectors:
    """An embedder that only knows the texts it was given vectors for."""

    def __init__(self, name: str, vectors: dict[str, Vector]) -> None:
        self.name = name
        self.dim = len(next(iter(vectors.values())))
        self._vectors = vectors

    async def embed(self, texts: Sequence[str]) -> list[Vector]:
        missing = [t for t in texts if t not in self._vectors]
        if missing:
            raise KeyError(f"{len(missing)} text(s) have no stored {self.name} vector")
        return [self._vectors[t] for t in texts]


def stored_fp32(path: Path = FP32_VECTORS) -> PrecomputedEmbedder | None:
    if not path.is_file():
        return None
    data = np.load(path)
    vectors = {
        str(t): [float(x) for x in v] for t, v in zip(data["texts"], data["vectors"], strict=True)
    }
    return PrecomputedEmbedder(StoredVectors(FP32_NAME, vectors))


@dataclass
class EmbeddersResult:
    conversation: str = ""
    queries: int = 0
    by_budget: dict[str, dict[int, Summary]] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)


async def _ranked(
    server: Server, emb: PrecomputedEmbedder, conv: Conversation, db: str
) -> dict[int, Summary]:
    await emb.aprefill([f.text for f in conv.facts] + [t for _, t in conv.queries])
    clock = SettableClock()
    memory = await open_memory(server.database(db), emb, clock=clock)
    try:
        engine = await memory.engine()
        await load_ours(engine, [conv], clock)
        dates = [f.observed_at for f in conv.facts if f.observed_at]
        clock.now = max(dates) + timedelta(days=1) if dates else clock.now
        evidence = await evidence_of(engine, conv.user_id)
        answers = [await ours_answers(engine, conv.user_id, t, evidence) for _, t in conv.queries]
    finally:
        await memory.aclose()
    queries: list[Query] = [q for q, _ in conv.queries]
    return summaries(queries, answers)


async def run(server: Server, minilm: PrecomputedEmbedder, folder: Path) -> EmbeddersResult:
    convs = stripped(load(folder))
    conv = next((c for c in convs if c.user_id.endswith("conv-26")), convs[0])
    out = EmbeddersResult(conversation=conv.user_id)
    out.queries = sum(1 for q, _ in conv.queries if q.evidence)
    fp32 = stored_fp32()
    candidates: list[tuple[str, PrecomputedEmbedder | None]] = [
        ("all-MiniLM-L6-v2, int8 ONNX (default)", minilm),
        ("all-MiniLM-L6-v2, fp32 torch (its vectors stored as float16)", fp32),
        ("feature hashing (offline fallback)", PrecomputedEmbedder(HashingEmbedder(384))),
    ]
    for n, (label, emb) in enumerate(candidates):
        if emb is None:
            out.missing.append(label)
            continue
        out.by_budget[label] = await _ranked(server, emb, conv, f"e{n}_mem01session")
    return out


def table(r: EmbeddersResult) -> str:
    lines = [
        "| embedder | recall_any@5 | recall_any@10 | "
        + " | ".join(f"in block @{b}" for b in BUDGETS)
        + " |",
        "|---|---:|---:|" + "---:|" * len(BUDGETS),
    ]
    for label, per in r.by_budget.items():
        cells = " | ".join(f"{per[b].in_block:.3f}" for b in BUDGETS)
        lines.append(f"| {label} | {per[800].at5:.3f} | {per[800].at10:.3f} | {cells} |")
    note = (
        f"\n\nLoCoMo {r.conversation}: its {r.queries} questions of categories 1-4 with "
        "evidence, this project's ranking and blocks only, one run per embedder on a fresh "
        "database."
    )
    if r.missing:
        note += (
            f" Not run: {', '.join(r.missing)} (no `{FP32_VECTORS.name}`: see "
            "`bench/minilm_fidelity.py`)."
        )
    return "\n".join(lines) + note
