"""Retrieval quality on LoCoMo-format data: every system on the same beliefs and vectors.

Each conversation's observation facts become beliefs of one user (ADD, provenance = the
facts' dia_ids; this project's clock set to each fact's session date, so recency varies);
each QA of categories 1-4 is a recall query, its text stripped of surrounding whitespace
for every system alike. A hit is a recalled item whose provenance holds one of the QA's
evidence ids.

Fairness: every system is asked for the same number of candidates (:data:`CANDIDATES`,
enough to fill the largest budget), and each budget's block is built from them: this
project and mem01-engine pack their own blocks; mem0 and the two baselines, which render
none, have their ranked results packed as ``- text`` lines under a one-line header. The
whole evaluation runs twice (fresh databases); a figure that differs between the runs is
marked.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg

from mem01session.engine import BeliefEngine, RecallRequest
from mem01session.engine.ops import Op, Provenance
from mem01session.engine.read import tsquery_terms
from mem01session.tokens import default_token_counter

from .common import PrecomputedEmbedder, Server, open_memory, scratch, vector_text
from .locomo import Conversation, load
from .metrics import Answer, Query, Summary, pack, parse_ids, summarize
from .peer_client import Peer, PeerError

BUDGETS = (200, 400, 800, 1600)
CANDIDATES = 100
HEADER = "Memories about the user (most relevant first):\n"
OURS = "mem01session"
SYSTEMS = (OURS, "vector-only (exact KNN)", "full-text-only", "mem0", "mem01-engine")


@dataclass
class SettableClock:
    now: datetime = datetime(2020, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


# One system's answers: per budget, one Answer per query (the ranking is the same in all).
Answers = dict[int, list[Answer]]


@dataclass
class QualityResult:
    conversations: int = 0
    facts: int = 0
    queries: int = 0
    ceiling: float = 0.0
    # system -> budget -> summary, for each of the two runs
    runs: list[dict[str, dict[int, Summary]]] = field(default_factory=list)
    load_ms_per_fact: dict[str, float] = field(default_factory=dict)
    failures: dict[str, str] = field(default_factory=dict)

    def summary(self, system: str, budget: int = 800) -> Summary:
        return self.runs[0][system][budget]

    def agreed(self, system: str, budget: int, attribute: str) -> bool:
        values = {getattr(run[system][budget], attribute) for run in self.runs if system in run}
        return len(values) <= 1


def _count(text: str) -> int:
    return default_token_counter().count(text)


def packed_answers(ranked: list[tuple[str, frozenset[str]]]) -> dict[int, Answer]:
    """Answers for a system that returns a list: its leading items as a bullet block."""
    out: dict[int, Answer] = {}
    for budget in BUDGETS:
        taken = pack([t for t, _ in ranked], _count, budget, HEADER)
        text = HEADER + "".join(f"- {ranked[i][0]}\n" for i in taken)
        out[budget] = Answer(
            ranked=[ids for _, ids in ranked[:10]],
            block=[ranked[i][1] for i in taken],
            block_tokens=_count(text) if taken else 0,
        )
    return out


async def load_ours(engine: BeliefEngine, convs: list[Conversation], clock: SettableClock) -> float:
    started = time.perf_counter()
    n = 0
    for conv in convs:
        for fact in conv.facts:
            clock.now = fact.observed_at or clock.now
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


async def evidence_of(engine: BeliefEngine, user: str) -> dict[int, frozenset[str]]:
    """Each of the user's beliefs' evidence ids, from its provenance (read once: the
    default block, and so its recall result, carries no sources)."""
    return {b.id: _ids_of(b.sources) for b in await engine.history(user, limit=1_000_000)}


async def ours_answers(
    engine: BeliefEngine, user: str, question: str, evidence: dict[int, frozenset[str]]
) -> dict[int, Answer]:
    ranked = [evidence[s.belief.id] for s in await engine.search(user, question, limit=10)]
    out: dict[int, Answer] = {}
    for budget in BUDGETS:
        result = await engine.recall(user, RecallRequest(question, max_tokens=budget))
        out[budget] = Answer(ranked, [evidence[s.belief.id] for s in result.beliefs], result.tokens)
    return out


_BASELINE_SQL = {
    "vector-only (exact KNN)": """
        SELECT b.content, (SELECT string_agg(s.item_ref, ' ') FROM belief_sources s
                           WHERE s.user_id = b.user_id AND s.belief_id = b.id)
        FROM beliefs b WHERE b.user_id = %(user)s AND b.status = 'active'
        ORDER BY b.embedding <=> %(vec)s::vector, b.id LIMIT %(limit)s""",
    "full-text-only": """
        SELECT b.content, (SELECT string_agg(s.item_ref, ' ') FROM belief_sources s
                           WHERE s.user_id = b.user_id AND s.belief_id = b.id)
        FROM beliefs b WHERE b.user_id = %(user)s AND b.status = 'active'
          AND b.tsv @@ to_tsquery('english', %(terms)s)
        ORDER BY ts_rank(b.tsv, to_tsquery('english', %(terms)s)) DESC, b.id LIMIT %(limit)s""",
}


def _baseline(
    conn: psycopg.Connection, name: str, user: str, q: str, vec: list[float]
) -> dict[int, Answer]:
    terms = tsquery_terms(q)
    if name == "full-text-only" and not terms:
        return {b: Answer(ranked=[]) for b in BUDGETS}
    params = {"user": user, "vec": vector_text(vec), "terms": terms, "limit": CANDIDATES}
    rows = conn.execute(_BASELINE_SQL[name], params).fetchall()
    return packed_answers([(r[0], parse_ids(r[1])) for r in rows])


def _peer_answers(
    peer: Peer, convs: list[Conversation], emb: PrecomputedEmbedder
) -> tuple[list[dict[int, Answer]], float]:
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
    answers: list[dict[int, Answer]] = []
    for conv in convs:
        for _, question in conv.queries:
            reply = peer.call(
                "recall",
                user=conv.user_id,
                query=question,
                vector=emb.cache[question],
                k=CANDIDATES,
                budgets=list(BUDGETS),
            )
            items = [(i["text"], frozenset(i["ids"])) for i in reply["items"]]
            if "blocks" not in reply:  # the peer renders no block: pack its list
                answers.append(packed_answers(items))
                continue
            ranked = [ids for _, ids in items[:10]]
            answers.append(
                {
                    int(b): Answer(
                        ranked,
                        [frozenset(i["ids"]) for i in block["items"]],
                        _count(block["text"]) if block["items"] else 0,
                    )
                    for b, block in reply["blocks"].items()
                }
            )
    return answers, load_ms


def summaries(queries: list[Query], answers: list[dict[int, Answer]]) -> dict[int, Summary]:
    return {b: summarize(queries, [a[b] for a in answers]) for b in BUDGETS}


async def _one_run(
    server: Server, emb: PrecomputedEmbedder, convs: list[Conversation], log: Path, run: int,
    out: QualityResult,
) -> dict[str, dict[int, Summary]]:  # fmt: skip
    queries: list[Query] = [q for c in convs for q, _ in c.queries]
    dates = [f.observed_at for c in convs for f in c.facts if f.observed_at]
    clock = SettableClock()
    url = server.database(f"q{run}_mem01session")
    memory = await open_memory(url, emb, clock=clock)
    by_system: dict[str, dict[int, Summary]] = {}
    try:
        engine = await memory.engine()
        out.load_ms_per_fact[OURS] = await load_ours(engine, convs, clock)
        clock.now = max(dates) + timedelta(days=1) if dates else clock.now
        evidence = {c.user_id: await evidence_of(engine, c.user_id) for c in convs}
        ours = [
            await ours_answers(engine, c.user_id, t, evidence[c.user_id])
            for c in convs
            for _, t in c.queries
        ]
    finally:
        await memory.aclose()
    by_system[OURS] = summaries(queries, ours)
    with psycopg.connect(url, autocommit=True) as conn:
        for name in _BASELINE_SQL:
            answers = [
                _baseline(conn, name, c.user_id, t, emb.cache[t])
                for c in convs
                for _, t in c.queries
            ]
            by_system[name] = summaries(queries, answers)
    for name in ("mem0", "mem01-engine"):
        try:
            with Peer(name, log) as peer:
                purl = server.database(f"q{run}_" + name.replace("-", "_"))
                peer.setup(purl, emb.dim, scratch())
                answers, load_ms = _peer_answers(peer, convs, emb)
            by_system[name] = summaries(queries, answers)
            out.load_ms_per_fact[name] = load_ms
        except (PeerError, OSError) as exc:
            out.failures[name] = str(exc)
    return by_system


def stripped(convs: list[Conversation]) -> list[Conversation]:
    """The questions as every system gets them: without surrounding whitespace."""
    return [Conversation(c.user_id, c.facts, [(q, t.strip()) for q, t in c.queries]) for c in convs]


async def run(
    server: Server, emb: PrecomputedEmbedder, folder: Path, log: Path, runs: int = 2
) -> QualityResult:
    convs = stripped(load(folder))
    out = QualityResult(conversations=len(convs))
    queries: list[Query] = [q for c in convs for q, _ in c.queries]
    out.facts = sum(len(c.facts) for c in convs)
    scored = [q for q in queries if q.evidence]
    out.queries = len(scored)
    covered = {i for c in convs for f in c.facts for i in f.dia_ids}
    out.ceiling = sum(bool(q.evidence & covered) for q in scored) / max(len(scored), 1)
    await emb.aprefill([f.text for c in convs for f in c.facts])
    await emb.aprefill([t for c in convs for _, t in c.queries])
    for n in range(runs):
        out.runs.append(await _one_run(server, emb, convs, log, n, out))
    return out


def _cell(r: QualityResult, system: str, budget: int, attribute: str) -> str:
    value = getattr(r.summary(system, budget), attribute)
    mark = "" if r.agreed(system, budget, attribute) else " †"
    return f"{value:.3f}{mark}"


def table(r: QualityResult) -> str:
    systems = [s for s in SYSTEMS if s in r.runs[0]]
    lines = [
        "| system | recall_any@5 | recall_any@10 | "
        + " | ".join(f"in block @{b}" for b in BUDGETS)
        + " | block tokens @800 |",
        "|---|---:|---:|" + "---:|" * len(BUDGETS) + "---:|",
    ]
    for name in systems:
        blocks = " | ".join(_cell(r, name, b, "in_block") for b in BUDGETS)
        tokens = r.summary(name).mean_tokens
        lines.append(
            f"| {name} | {_cell(r, name, 800, 'at5')} | {_cell(r, name, 800, 'at10')} | {blocks} "
            f"| {tokens:.0f} |"
        )
    lines.append(
        f"| *ceiling: evidence any observation covers* | | | {r.ceiling:.3f} | {r.ceiling:.3f} "
        f"| {r.ceiling:.3f} | {r.ceiling:.3f} | |"
    )
    return "\n".join(lines)


def categories(r: QualityResult) -> str:
    lines = [
        "| system | category 1 | category 2 | category 3 | category 4 |",
        "|---|---:|---:|---:|---:|",
    ]
    for name in (s for s in SYSTEMS if s in r.runs[0]):
        cats = r.summary(name).by_category
        lines.append(
            f"| {name} | "
            + " | ".join(f"{cats.get(c, float('nan')):.3f}" for c in (1, 2, 3, 4))
            + " |"
        )
    return "\n".join(lines)


def chart_data(r: QualityResult) -> dict[str, dict[str, float]]:
    """Evidence in the block, per system and budget (for the recall-vs-budget chart)."""
    return {
        name: {str(b): r.summary(name, b).in_block for b in BUDGETS}
        for name in SYSTEMS
        if name in r.runs[0]
    }


def deterministic(r: QualityResult) -> list[str]:
    """The systems whose every figure agreed between the runs."""
    attrs = ("at5", "at10", "in_block")
    return [
        name
        for name in SYSTEMS
        if name in r.runs[0] and all(r.agreed(name, b, a) for b in BUDGETS for a in attrs)
    ]
