"""Retrieval-quality metrics, pure and stdlib-only (unit-tested in tests/bench).

A query has a set of evidence ids; a system answers with a ranked list of recalled items,
each carrying the evidence ids of its provenance, and the block it would put in the prompt
(the items that fit the token budget, and the block's token count). A hit is an item whose
provenance shares one id with the evidence.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

_ID_SPLIT = re.compile(r"[\s,;]+")


def parse_ids(raw: object) -> frozenset[str]:
    """Evidence or provenance ids from a string ("D1:3", "D1:3; D2:5") or a list of them."""
    if raw is None:
        return frozenset()
    if isinstance(raw, str):
        return frozenset(p for p in _ID_SPLIT.split(raw) if p)
    if isinstance(raw, Iterable):
        out: set[str] = set()
        for item in raw:
            out |= parse_ids(item)
        return frozenset(out)
    return frozenset({str(raw)})


@dataclass(frozen=True)
class Answer:
    """What one system recalled for one query."""

    ranked: Sequence[frozenset[str]]  # provenance ids of each recalled item, best first
    block: Sequence[frozenset[str]] = ()  # provenance ids of the items in the budgeted block
    block_tokens: int = 0


@dataclass(frozen=True)
class Query:
    query_id: str
    evidence: frozenset[str]
    category: int = 0


def hit(items: Iterable[frozenset[str]], evidence: frozenset[str]) -> bool:
    return any(ids & evidence for ids in items)


def recall_any_at(answer: Answer, evidence: frozenset[str], k: int) -> bool:
    return hit(list(answer.ranked)[:k], evidence)


@dataclass
class Summary:
    """Aggregates over the queries of one system."""

    queries: int = 0
    at5: float = 0.0
    at10: float = 0.0
    in_block: float = 0.0
    mean_tokens: float = 0.0
    by_category: dict[int, float] = field(default_factory=dict)  # in-block recall per category


def summarize(queries: Sequence[Query], answers: Sequence[Answer]) -> Summary:
    """recall_any@5, @10 and within the block, mean block tokens; queries without evidence
    are skipped (they cannot be scored)."""
    if len(queries) != len(answers):
        raise ValueError("one answer per query")
    scored = [(q, a) for q, a in zip(queries, answers, strict=True) if q.evidence]
    if not scored:
        return Summary()
    at5 = [recall_any_at(a, q.evidence, 5) for q, a in scored]
    at10 = [recall_any_at(a, q.evidence, 10) for q, a in scored]
    blk = [hit(a.block, q.evidence) for q, a in scored]
    cats: dict[int, list[bool]] = {}
    for (q, _), h in zip(scored, blk, strict=True):
        cats.setdefault(q.category, []).append(h)
    return Summary(
        queries=len(scored),
        at5=statistics.fmean(at5),
        at10=statistics.fmean(at10),
        in_block=statistics.fmean(blk),
        mean_tokens=statistics.fmean(a.block_tokens for _, a in scored),
        by_category={c: statistics.fmean(v) for c, v in sorted(cats.items())},
    )


def pack(
    items: Sequence[str], count: Callable[[str], int], budget: int, header: str = ""
) -> list[int]:
    """Indices of the leading items whose bullet lines fit ``budget`` tokens with the header.

    Used for the systems that return a list but render no block (their top results as
    ``- text`` lines, in rank order, stopping at the first line that does not fit).
    """
    taken: list[int] = []
    text = header
    for index, item in enumerate(items):
        candidate = f"{text}- {item}\n"
        if count(candidate) > budget:
            break
        text = candidate
        taken.append(index)
    return taken
