"""Benchmark 2: retrieval quality on LoCoMo-format data, every system on the same beliefs.

Each conversation's observation facts become beliefs of one user (ADD, provenance = the
facts' dia_ids and the session date); each QA of categories 1-4 is a recall query; a hit
is a recalled belief whose provenance holds one of the QA's evidence ids.
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import psycopg

from mem01session.engine import BeliefEngine, RecallRequest
from mem01session.engine.ops import Op, Provenance
from mem01session.engine.read import tsquery_terms
from mem01session.tokens import default_token_counter

from .common import PrecomputedEmbedder, Server, open_memory, vector_text
from .locomo import Conversation, load
from .metrics import Answer, Query, Summary, pack, parse_ids, summarize
from .peer_client import Peer, PeerError

BUDGET = 800
HEADER = "Memories about the user (most relevant first):\n"


@dataclass
class QualityResult:
    conversations: int = 0
    facts: int = 0
    queries: int = 0
    summaries: dict[str, Summary] = field(default_factory=dict)
    load_ms_per_fact: dict[str, float] = field(default_factory=dict)
    versions: dict[str, str] = field(default_factory=dict)
    failures: dict[str, str] = field(default_factory=dict)


def _count(text: str) -> int:
    return default_token_counter().count(text)


def packed_answer(ranked: list[tuple[str, frozenset[str]]]) -> Answer:
    """An answer for a system that returns a list: its leading items as a bullet block."""
    taken = pack([t for t, _ in ranked], _count, BUDGET, HEADER)
    text = HEADER + "".join(f"- {ranked[i][0]}\n" for i in taken)
    return Answer(
        ranked=[ids for _, ids in ranked[:10]],
        block=[ranked[i][1] for i in taken],
        block_tokens=_count(text) if taken else 0,
    )


async def _load_ours(engine: BeliefEngine, convs: list[Conversation]) -> float:
    started = time.perf_counter()
    n = 0
    for conv in convs:
        for fact in conv.facts:
            prov = Provenance(
                session_id=f"session_{fact.session}",
                item_ref=" ".join(sorted(fact.dia_ids)),
                observed_at=fact.observed_at,
                extractor="locomo-observation",
            )
            await engine.apply(conv.user_id, [Op.add(fact.text)], provenance=prov)
            n += 1
    return (time.perf_counter() - started) * 1000.0 / max(n, 1)


def _ids_of(sources: Any) -> frozenset[str]:
    return parse_ids([s.item_ref for s in sources if s.item_ref])


async def _ours(engine: BeliefEngine, user: str, question: str) -> Answer:
    ranked = await engine.search(user, question, limit=10)
    result = await engine.recall(user, RecallRequest(question, max_tokens=BUDGET))
    return Answer(
        ranked=[_ids_of(s.belief.sources) for s in ranked],
        block=[_ids_of(s.belief.sources) for s in result.beliefs],
        block_tokens=result.tokens,
    )


_BASELINE_SQL = {
    "vector": """
        SELECT b.content, (SELECT string_agg(s.item_ref, ' ') FROM belief_sources s
                           WHERE s.user_id = b.user_id AND s.belief_id = b.id)
        FROM beliefs b WHERE b.user_id = %(user)s AND b.status = 'active'
        ORDER BY b.embedding <=> %(vec)s::vector, b.id LIMIT 40""",
    "text": """
        SELECT b.content, (SELECT string_agg(s.item_ref, ' ') FROM belief_sources s
                           WHERE s.user_id = b.user_id AND s.belief_id = b.id)
        FROM beliefs b WHERE b.user_id = %(user)s AND b.status = 'active'
          AND b.tsv @@ to_tsquery('english', %(terms)s)
        ORDER BY ts_rank(b.tsv, to_tsquery('english', %(terms)s)) DESC, b.id LIMIT 40""",
}


def _baseline(conn: psycopg.Connection, kind: str, user: str, q: str, vec: list[float]) -> Answer:
    terms = tsquery_terms(q)
    if kind == "text" and not terms:
        return Answer(ranked=[])
    params = {"user": user, "vec": vector_text(vec), "terms": terms}
    rows = conn.execute(_BASELINE_SQL[kind], params).fetchall()  # type: ignore[arg-type]
    return packed_answer([(r[0], parse_ids(r[1])) for r in rows])


def _peer_answers(
    peer: Peer, convs: list[Conversation], emb: PrecomputedEmbedder
) -> tuple[list[Answer], float]:
    started = time.perf_counter()
    n = 0
    for conv in convs:
        facts = [
            {
                "text": f.text,
                "ids": sorted(f.dia_ids),
                "observed_at": f.observed_at.isoformat() if f.observed_at else None,
                "vector": emb.cache[f.text],
            }
            for f in conv.facts
        ]
        peer.call("add", user=conv.user_id, facts=facts)
        n += len(facts)
    load_ms = (time.perf_counter() - started) * 1000.0 / max(n, 1)
    answers: list[Answer] = []
    for conv in convs:
        for _, question in conv.queries:
            reply = peer.call(
                "recall",
                user=conv.user_id,
                query=question,
                vector=emb.cache[question],
                k=20 if peer.name == "mem0" else 10,
                budget=BUDGET,
            )
            items = [(i["text"], frozenset(i["ids"])) for i in reply["items"]]
            if "block" in reply:  # the peer packs its own block
                answers.append(
                    Answer(
                        ranked=[ids for _, ids in items[:10]],
                        block=[frozenset(i["ids"]) for i in reply["block"]],
                        block_tokens=_count(reply["text"]) if reply["block"] else 0,
                    )
                )
            else:
                answers.append(packed_answer(items))
    return answers, load_ms


async def run(server: Server, emb: PrecomputedEmbedder, folder: Path, log: Path) -> QualityResult:
    convs = load(folder)
    out = QualityResult(conversations=len(convs))
    queries: list[Query] = [q for c in convs for q, _ in c.queries]
    out.facts = sum(len(c.facts) for c in convs)
    out.queries = sum(1 for q in queries if q.evidence)
    await emb.aprefill([f.text for c in convs for f in c.facts])
    await emb.aprefill([t for c in convs for _, t in c.queries])
    dates = [f.observed_at for c in convs for f in c.facts if f.observed_at]
    now = max(dates) + timedelta(days=1) if dates else None

    url = server.database("q_mem01session")
    memory = await open_memory(url, emb, clock=(lambda: now) if now else None)
    engine = await memory.engine()
    try:
        out.load_ms_per_fact["mem01session"] = await _load_ours(engine, convs)
        ours = [await _ours(engine, c.user_id, t) for c in convs for _, t in c.queries]
    finally:
        await memory.aclose()
    out.summaries["mem01session"] = summarize(queries, ours)
    with psycopg.connect(url, autocommit=True) as conn:
        for kind, label in (("vector", "vector-only (exact KNN)"), ("text", "full-text-only")):
            answers = [
                _baseline(conn, kind, c.user_id, t, emb.cache[t])
                for c in convs
                for _, t in c.queries
            ]
            out.summaries[label] = summarize(queries, answers)

    for name in ("mem0", "mem01-engine"):
        try:
            with Peer(name, log) as peer:
                purl = server.database("q_" + name.replace("-", "_"))
                out.versions[name] = peer.setup(purl, emb.dim, tempfile.mkdtemp(dir="/tmp"))
                answers, load_ms = _peer_answers(peer, convs, emb)
            out.summaries[name] = summarize(queries, answers)
            out.load_ms_per_fact[name] = load_ms
        except (PeerError, OSError) as exc:
            out.failures[name] = str(exc)
    return out


def table(result: QualityResult) -> str:
    lines = [
        "| system | recall_any@5 | recall_any@10 | recall_any in 800-token block | mean block "
        "tokens | category 1 | category 2 | category 3 | category 4 |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, s in result.summaries.items():
        cats = " | ".join(f"{s.by_category.get(c, float('nan')):.3f}" for c in (1, 2, 3, 4))
        lines.append(
            f"| {name} | {s.at5:.3f} | {s.at10:.3f} | {s.in_block:.3f} | {s.mean_tokens:.0f} "
            f"| {cats} |"
        )
    return "\n".join(lines)
