"""``python -m bench fusion``: how the read path's choices were made, on LoCoMo conversation 26.

The conversation's observation facts become one user's beliefs (each stated on its
session's date, so recency varies); each question of categories 1-4 fetches its candidates
once per word-rarity cutoff, and every fusion variant ranks and packs those same
candidates. Reported: recall_any@5/@10 of the ranked list, and whether the evidence is in
the block at several token budgets.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from mem01session.engine.candidates import Fetched, fetch, pool_for
from mem01session.engine.lines import Style, asks_when
from mem01session.engine.read import clean_query
from mem01session.engine.render import render_block
from mem01session.engine.scoring import Fusion, drop_near_duplicates, score
from mem01session.tokens import TokenCounter

from .common import PrecomputedEmbedder, Server, open_memory
from .locomo import load
from .metrics import Answer, Query, parse_ids, summarize
from .quality import SettableClock, load_ours

BUDGETS = (200, 400, 800, 1600)
SHARES = (1.01, 0.5, 0.3)  # 1.01: no word is left out


@dataclass
class Variant:
    name: str
    fusion: Fusion
    share: float


@dataclass
class Row:
    variant: Variant
    at5: float
    at10: float
    in_block: dict[int, float] = field(default_factory=dict)
    tokens: dict[int, float] = field(default_factory=dict)


CHOSEN = "k=60, text weight 2 (chosen on real dialogue: see the end-to-end section)"
_SUM: dict[str, Any] = {"combine": "sum", "min_coverage": 0.0}
_OLD: dict[str, Any] = {**_SUM, "use_coverage": False, "w_recency": 0.12}
_T1: dict[str, Any] = {"text_weight": 1.0}  # every variant before the text weight's choice
VARIANTS = [
    Variant("rank fusion, every word, recency 0.12 added (before)",
            Fusion("rrf", 10, **_OLD, **_T1), 1.01),
    Variant("rank fusion, common words out, recency 0.12 added",
            Fusion("rrf", 10, **_OLD, **_T1), 0.5),
    Variant("rank fusion + coverage, common words out, recency 0.04 added",
            Fusion("rrf", 10, **_SUM, **_T1), 0.5),
    Variant("same, text matches under 20% of the query's weight out",
            Fusion("rrf", 10, combine="sum", **_T1), 0.5),
    Variant("same, recency scales relevance (k=10)", Fusion(k=10, **_T1), 0.5),
    Variant("same, k=60", Fusion(**_T1), 0.5),
    Variant("k=60, no recency", Fusion(w_recency=0.0, **_T1), 0.5),
    Variant("k=60, recency 0.12", Fusion(w_recency=0.12, **_T1), 0.5),
    Variant("k=60, every text match", Fusion(min_coverage=0.0, **_T1), 0.5),
    Variant("k=60, words in 30% left out", Fusion(**_T1), 0.3),
    Variant("k=20", Fusion(k=20, **_T1), 0.5),
    Variant("stronger list + 0.5 x weaker, k=20", Fusion("max", 20, agreement=0.5, **_T1), 0.5),
    Variant(CHOSEN, Fusion(), 0.5),
    Variant("k=60, text weight 3", Fusion(text_weight=3.0), 0.5),
    Variant("vector ranking alone, recency scales it", Fusion(text_weight=0.0), 0.5),
    Variant("vector ranking alone, nothing else",
            Fusion(text_weight=0.0, w_recency=0.0, w_confidence=0.0), 0.5),
]  # fmt: skip


@dataclass
class FusionResult:
    conversation: str
    facts: int
    queries: int
    ceiling: float
    rows: list[Row]


def _answer(
    got: Fetched, question: str, now: datetime, fusion: Fusion, counter: TokenCounter, budget: int
) -> Answer:
    ranked = drop_near_duplicates(score(got.candidates, now, fusion=fusion), got.near)

    def ids(s) -> frozenset[str]:  # type: ignore[no-untyped-def]
        return parse_ids([src.item_ref for src in s.belief.sources if src.item_ref])

    block = render_block(ranked, counter, budget, style=Style(dates=asks_when(question)))
    return Answer([ids(s) for s in ranked[:10]], [ids(s) for s in block.packed], block.tokens)


async def run(server: Server, emb: PrecomputedEmbedder, folder: Path) -> FusionResult:
    [conv] = [c for c in load(folder) if c.user_id.endswith("conv-26")][:1] or load(folder)[:1]
    questions = [(q, t) for q, t in conv.queries if q.evidence]
    await emb.aprefill([f.text for f in conv.facts] + [t for _, t in questions])
    clock = SettableClock()
    memory = await open_memory(server.database("f_mem01session"), emb, clock=clock)
    try:
        engine = await memory.engine()
        await load_ours(engine, [conv], clock)
        now = max(f.observed_at for f in conv.facts if f.observed_at) + timedelta(days=1)
        clock.now = now
        pools = {pool_for(b) for b in BUDGETS}
        fetched = {
            (share, pool): [
                await fetch(
                    engine.parts, conv.user_id, clean_query(t), "active", now, pool=pool,
                    common_share=share,
                )
                for _, t in questions
            ]
            for share in SHARES
            for pool in pools
        }  # fmt: skip
        counter = engine.token_counter
    finally:
        await memory.aclose()
    queries: list[Query] = [q for q, _ in questions]
    covered = {i for f in conv.facts for i in f.dia_ids}
    ceiling = sum(bool(q.evidence & covered) for q in queries) / len(queries)
    rows = []
    for v in VARIANTS:
        per_budget = {
            b: [
                _answer(got, t, now, v.fusion, counter, b)
                for got, (_, t) in zip(fetched[v.share, pool_for(b)], questions, strict=True)
            ]
            for b in BUDGETS
        }
        s800 = summarize(queries, per_budget[800])
        row = Row(v, s800.at5, s800.at10)
        for b, answers in per_budget.items():
            s = summarize(queries, answers)
            row.in_block[b], row.tokens[b] = s.in_block, s.mean_tokens
        rows.append(row)
    return FusionResult(conv.user_id, len(conv.facts), len(queries), ceiling, rows)


def table(r: FusionResult, highlight: Sequence[str] = (CHOSEN,)) -> str:
    head = " | ".join(f"in block @{b}" for b in BUDGETS)
    lines = [
        f"| variant | @5 | @10 | {head} |",
        "|---|---:|---:|" + "---:|" * len(BUDGETS),
    ]
    for row in r.rows:
        name = f"**{row.variant.name}**" if row.variant.name in highlight else row.variant.name
        cells = " | ".join(f"{row.in_block[b]:.3f}" for b in BUDGETS)
        lines.append(f"| {name} | {row.at5:.3f} | {row.at10:.3f} | {cells} |")
    return "\n".join(lines)


def note(r: FusionResult) -> str:
    return (
        f"\n\nLoCoMo {r.conversation} only: {r.facts} observation facts as one user's "
        "beliefs, each stated on its session's date (so recency varies), and the "
        f"{r.queries} questions of categories 1-4 that have evidence. Each question's "
        "candidates are fetched once per word cutoff (as many as the library fetches for "
        "each budget) and ranked, near-duplicates dropped and packed by each variant; "
        '@5/@10 come from the ranked list, "in block" from the packed block at each token '
        f"budget. Evidence any observation covers at all (the ceiling): {r.ceiling:.3f}. "
        f"One question is {1 / r.queries:.4f}: small differences are one or two questions. "
        "The variant in bold is the library's default. The variants above it weigh the "
        "text list once; its weight, 2, was chosen where it mattered, on what the pipeline "
        "keeps of the real dialogue (the end-to-end section's last table), and costs little "
        "here."
    )
