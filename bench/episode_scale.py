"""``python -m bench episodes``: what a recall and a write cost as one user's episodes grow.

One user per scale (1,000 to 100,000 episodes, 100 synthetic beliefs each) beside a
deployment's other users (:data:`OTHERS` users of :data:`OTHER_EPISODES` episodes), every
episode a synthetic first-person sentence of 12-25 words said over two years, COPY'd in
the shape the write path makes (vector named by its model, word counts in
``episode_terms``); the HNSW index over the episode vectors is built after the COPY (its
time and size reported). Then, in rounds in which every scale and variant takes its turn
(the order rotating, so that a slow spell of the machine falls on all of them alike):

- the default recall (``BeliefEngine.recall``: beliefs and episodes, 800 tokens, the block
  rendered), as the library runs it (a user with a lifetime of episodes read through the
  index, see ``episode_candidates``) and as before (every vector read, every full-text
  match scored), its query vector precomputed, timed in this process;
- mem0 holding the same user's messages raw (``infer=False``, its pgvector store and its
  HNSW index), ``Memory.search`` with the user filter and 20 results, timed in its process.

The vector candidates the index finds are compared with the exact scan's (the share of the
exact top 50 it returns), and each recall's block with the exact variant's. Writes: one
user message through ``BeliefEngine.apply`` (the episode, its words, the index), vector
precomputed.
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import psycopg

from mem01session.db import Database, migrate
from mem01session.db.vector_index import vector_index
from mem01session.embeddings import Vector
from mem01session.engine import BeliefEngine, RecallRequest
from mem01session.engine import episode_candidates as candidates
from mem01session.engine.episodes import Utterance, contextual
from mem01session.engine.ops import Provenance

from .common import PrecomputedEmbedder, Server, percentiles, scratch, vector_binary
from .latency import copy_mem0
from .peer_client import Peer, PeerError
from .synthetic import MODIFIERS, NOW, OBJECTS, copy_rows, queries, synthetic_rows

SCALES = (1000, 10000, 30000, 100000)
BELIEFS = 100
OTHERS = 500
OTHER_EPISODES = 20
OVERLAP_K = 50
WRITES = 40
INDEX = "as the library reads it (default)"
EXACT = "every vector read (before)"
MEM0 = "mem0 (raw messages, search)"
VECTORS_READ = "the user's vectors read, the text bound kept"  # compared, not timed
DAYS = INDEX
DAYS_BEFORE = "each vector of those days read (before)"
DAY_FORMS = (  # from a wide span to a narrow one, the messages said over two years
    "what did I say about {o} since last year?",
    "any tips on {o} from last summer?",
    "what did I tell you about {o} in March?",
    "what did I say about {o} yesterday?",
)
DAY_QUESTIONS = 40
OPENERS = (
    "I spent the afternoon with", "Yesterday I finally tried", "My sister keeps talking about",
    "We argued for an hour about", "I think I am getting better at", "Last week I signed up for",
    "Honestly I never expected to enjoy", "My manager asked me about", "I bought new gear for",
    "I keep dreaming about",
)  # fmt: skip
TAILS = (
    "and it was more fun than I thought", "but the weather ruined most of it",
    "so I will probably do it again next month", "which reminded me of my grandmother",
    "and I took far too many photos", "even though I was exhausted afterwards",
    "and my friends could not stop laughing", "though honestly it cost too much",
)  # fmt: skip


def said(rng: random.Random) -> str:
    """One synthetic first-person sentence (12-25 words)."""
    return (
        f"{rng.choice(OPENERS)} {rng.choice(OBJECTS)} {rng.choice(MODIFIERS)} {rng.choice(TAILS)}."
    )


Message = tuple[str, str, Any]  # user, text, said at


def messages(user: str, count: int, seed: int) -> list[Message]:
    rng = random.Random(seed)
    return [(user, said(rng), NOW - timedelta(days=rng.uniform(0, 730))) for _ in range(count)]


def copy_episodes(url: str, emb: PrecomputedEmbedder, said_by: Sequence[Message]) -> None:
    """COPY the messages as episodes (one passage each, in chats of 20), then recount the
    words and episodes of their users as the write path keeps them."""
    copy_said(
        url, emb,
        [Said(user, f"chat-{i // 20}", i + 1, 0, text, None, when)
         for i, (user, text, when) in enumerate(said_by)],
    )  # fmt: skip


@dataclass(frozen=True)
class Said:
    """One episode row as the write path makes it: a passage of a user message (its
    ``passage`` index within the message) and the end of what that message answered."""

    user: str
    session_id: str
    job_id: int
    passage: int
    content: str
    context: str | None
    said_at: Any


def copy_said(url: str, emb: PrecomputedEmbedder, rows: Sequence[Said]) -> None:
    """COPY ``rows`` as episodes (their vectors made as the write path makes them, of their
    words and context, named by the embedder's model), then recount their users' words
    (``episode_terms``) and episodes as the write path keeps them. The users must have no
    episodes yet."""
    emb.prefill([*(r.content for r in rows), *(r.context for r in rows if r.context)])
    users = sorted({r.user for r in rows})
    with psycopg.connect(url) as conn, conn.cursor() as cur:
        with cur.copy(
            "COPY episodes (user_id, session_id, job_id, message, passage, role, content, "
            "context, said_at, embedding, embedding_model) FROM STDIN (FORMAT BINARY)"
        ) as copy:
            copy.set_types(
                ["text", "text", "int8", "int2", "int2", "text", "text", "text", "timestamptz",
                 "bytea", "text"]
            )  # fmt: skip
            for r in rows:
                copy.write_row(
                    (r.user, r.session_id, r.job_id, 0, r.passage, "user", r.content, r.context,
                     r.said_at, vector_binary(_vector(emb, r)), emb.name)
                )  # fmt: skip
        cur.execute(
            "INSERT INTO episode_terms (user_id, lexeme, episodes) SELECT e.user_id, t.lexeme, "
            "count(*) FROM episodes e, unnest(tsvector_to_array(e.tsv)) AS t(lexeme) "
            "WHERE e.user_id = ANY(%s) GROUP BY e.user_id, t.lexeme",
            (users,),
        )
        cur.execute(
            "INSERT INTO memory_users (user_id, episodes) SELECT user_id, count(*) FROM episodes "
            "WHERE user_id = ANY(%s) GROUP BY user_id ON CONFLICT (user_id) "
            "DO UPDATE SET episodes = EXCLUDED.episodes",
            (users,),
        )
        conn.commit()


def _vector(emb: PrecomputedEmbedder, row: Said) -> Vector:
    context = emb.cache[row.context] if row.context else None
    return contextual(emb.cache[row.content], context)


@dataclass
class EpisodeScale:
    """Recall latency (ms) per variant and number of episodes of the user."""

    scales: tuple[int, ...]
    rounds: int
    per_round: int
    samples: dict[str, dict[int, list[float]]] = field(default_factory=dict)
    day_samples: dict[str, dict[int, list[float]]] = field(default_factory=dict)  # DAY_FORMS
    quoted: dict[int, float] = field(default_factory=dict)  # episodes in the block, mean
    overlap: dict[int, float] = field(default_factory=dict)  # of the exact top OVERLAP_K
    walks: dict[int, str] = field(default_factory=dict)  # how the user's vectors are read
    # Share of blocks alike: with the user's vectors read exactly (the same text bound), and
    # as before (every vector read, every match scored).
    same_block: dict[int, float] = field(default_factory=dict)
    same_as_before: dict[int, float] = field(default_factory=dict)
    writes: dict[int, list[float]] = field(default_factory=dict)  # ms per episode written
    rows: int = 0
    build_s: float = 0.0
    index_mb: float = 0.0
    bits_mb: float = 0.0  # episodes_user_bits_idx
    table_mb: float = 0.0
    total_mb: float = 0.0  # the table with its TOAST and every index
    load_s: float = 0.0
    failures: dict[str, str] = field(default_factory=dict)

    def figures(self, variant: str, scale: int) -> tuple[float, float, float]:
        return percentiles(self.samples[variant][scale])


def _build_index(url: str, emb: PrecomputedEmbedder, out: EpisodeScale) -> None:
    index = vector_index(emb.name, emb.dim)
    assert index is not None
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"DROP INDEX IF EXISTS {index.name}")
        conn.execute("SET maintenance_work_mem = '1GB'")
        started = time.perf_counter()
        conn.execute(index.create_sql(concurrently=False))
        out.build_s = time.perf_counter() - started
        conn.execute("VACUUM (ANALYZE) episodes")
        conn.execute("VACUUM (ANALYZE) episode_terms")
        conn.execute("VACUUM (ANALYZE) memory_users")
        row = conn.execute(
            "SELECT pg_relation_size(%s::regclass), pg_relation_size('episodes'), "
            "pg_total_relation_size('episodes'), "
            "pg_relation_size('episodes_user_bits_idx'), count(*) FROM episodes",
            (index.name,),
        ).fetchone()
        assert row is not None
        out.index_mb, out.table_mb, out.total_mb, out.bits_mb = (b / 2**20 for b in row[:4])
        out.rows = int(row[4])


def exact_found(
    url: str, emb: PrecomputedEmbedder, user: str, texts: Sequence[str], walk: str
) -> float:
    """The share of the exact nearest :data:`OVERLAP_K` episodes the user's ``walk`` (the
    HNSW index, or the bits: :data:`candidates.BITS`) returns."""
    index = vector_index(emb.name, emb.dim)
    assert index is not None
    exact = (
        "SELECT id FROM episodes WHERE user_id = %(u)s AND embedding_model = %(m)s "
        "ORDER BY embedding <=> %(q)s::vector, id DESC LIMIT %(k)s"
    )
    if walk == candidates.BITS:
        near = (
            "SELECT r.id FROM (SELECT id FROM episodes WHERE user_id = %(u)s "
            "AND embedding_model = %(m)s AND hidden_at IS NULL "
            "ORDER BY embedding_bits <~> binary_quantize(%(q)s::vector), id DESC "
            f"LIMIT {OVERLAP_K * candidates.BITS_FACTOR}) r JOIN episodes e "
            "ON e.user_id = %(u)s AND e.id = r.id "
            "ORDER BY e.embedding <=> %(q)s::vector, e.id DESC LIMIT %(k)s"
        )
    else:
        near = (
            f"SELECT id FROM episodes e WHERE user_id = %(u)s AND embedding_model = "
            f"{index.model_literal} ORDER BY {index.distance('e.embedding', '%(q)s')} "
            "LIMIT %(k)s"
        )
    found = 0
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SET hnsw.iterative_scan = relaxed_order")
        conn.execute("SET hnsw.ef_search = 100")
        for text in texts:
            q = "[" + ",".join(map(str, emb.cache[text])) + "]"
            args = {"u": user, "m": emb.name, "q": q, "k": OVERLAP_K}
            want = {r[0] for r in conn.execute(exact, args).fetchall()}
            got = {r[0] for r in conn.execute(near, args).fetchall()}
            found += len(want & got)
    return found / (OVERLAP_K * len(texts))


async def _writes(
    engine: BeliefEngine, emb: PrecomputedEmbedder, user: str, seed: int
) -> list[float]:
    rng = random.Random(seed)
    texts = [said(rng) + f" ({seed}-{i})" for i in range(WRITES)]
    emb.prefill(texts)
    out = []
    for i, text in enumerate(texts):
        prov = Provenance(session_id=f"bench-write-{seed}", job_id=10**9 + seed * WRITES + i)
        started = time.perf_counter()
        await engine.apply(
            user, [], provenance=prov, utterances=[Utterance(0, "user", text)],
            vectors={text: emb.cache[text]},
        )  # fmt: skip
        out.append((time.perf_counter() - started) * 1000.0)
    return out


async def run(
    server: Server,
    emb: PrecomputedEmbedder,
    scales: Sequence[int] = SCALES,
    *,
    rounds: int = 10,
    per_round: int = 20,
    warmup: int = 20,
    log: Path | None = None,
) -> EpisodeScale:
    started = time.perf_counter()
    url = server.database("episode_scale")
    migrate.upgrade(url, embedding_dim=emb.dim, embedding_model=emb.name)
    users = {n: f"episodes-{n}" for n in scales}
    copy_rows(url, emb, synthetic_rows([(u, BELIEFS) for u in users.values()], seed=11))
    said_by = {n: messages(user, n, seed=n) for n, user in users.items()}
    others = [m for i in range(OTHERS) for m in messages(f"other-{i:04d}", OTHER_EPISODES, i)]
    for group in [*said_by.values(), others]:
        copy_episodes(url, emb, group)
    out = EpisodeScale(tuple(scales), rounds, per_round)
    _build_index(url, emb, out)
    texts = queries(random.Random(3), 200)
    emb.prefill(texts)
    mem0: Peer | None = None
    try:
        mem0 = Peer("mem0", log or Path(scratch()) / "peers.log")
        murl = server.database("episode_scale_mem0")
        mem0.setup(murl, emb.dim, scratch())
        copy_mem0(murl, emb, [m for group in said_by.values() for m in group] + others)
    except (PeerError, OSError, psycopg.Error) as exc:
        out.failures[MEM0] = str(exc)
        if mem0 is not None:
            mem0.close()
        mem0 = None
    out.load_s = time.perf_counter() - started
    db = await Database.open(url=url, embedding_model=emb.name, embedding_dim=emb.dim)
    exact_up_to, min_share, bits = (
        candidates.EXACT_UP_TO, candidates.MIN_SHARE, candidates.BITS_FACTOR
    )  # fmt: skip
    try:
        engine = BeliefEngine(db, emb, clock=lambda: NOW)
        for n, user in users.items():
            _, walk = await candidates._walk(engine.parts, user, emb.dim)
            out.walks[n] = walk if isinstance(walk, str) else "HNSW"
            # Read exactly, the exact nearest are found by definition.
            exactly = walk == candidates.EXACT
            out.overlap[n] = (
                1.0 if exactly else exact_found(url, emb, user, texts[:40], out.walks[n])
            )

        async def recall(variant: str, user: str, text: str) -> tuple[float, tuple[int, ...]]:
            candidates.EXACT_UP_TO = exact_up_to if variant != EXACT else 10**12
            candidates.MIN_SHARE = min_share if variant != VECTORS_READ else 2.0
            candidates.BITS_FACTOR = bits if variant != VECTORS_READ else 0
            t = time.perf_counter()
            result = await engine.recall(user, RecallRequest(text))
            ms = (time.perf_counter() - t) * 1000.0
            return ms, tuple(e.episode.id for e in result.episodes)

        for variant in (INDEX, EXACT):  # warm the caches and the plans
            for user in users.values():
                for i in range(warmup):
                    await recall(variant, user, texts[i % len(texts)])
        if mem0 is not None:
            plan = [{"user": u, "query": t, "vector": emb.cache[t]} for u in users.values()
                    for t in texts[:warmup]]  # fmt: skip
            mem0.call("latency", warmup=len(plan), queries=plan, k=20)
        quoted: dict[int, list[int]] = {n: [] for n in scales}
        alike: dict[int, list[bool]] = {n: [] for n in scales}
        alike_before: dict[int, list[bool]] = {n: [] for n in scales}
        order = [(v, n) for n in scales for v in (INDEX, EXACT, MEM0)]
        k = 0
        for _ in range(rounds):
            order = order[1:] + order[:1]
            for variant, n in order:
                batch = [texts[(k + i) % len(texts)] for i in range(per_round)]
                if variant == MEM0:
                    if mem0 is not None:
                        plan = [{"user": users[n], "query": t, "vector": emb.cache[t]}
                                for t in batch]  # fmt: skip
                        reply = mem0.call("latency", warmup=0, queries=plan, k=20)
                        out.samples.setdefault(MEM0, {}).setdefault(n, []).extend(reply["ms"])
                    continue
                for text in batch:
                    ms, block = await recall(variant, users[n], text)
                    out.samples.setdefault(variant, {}).setdefault(n, []).append(ms)
                    if variant == INDEX:
                        quoted[n].append(len(block))
                        _, read = await recall(VECTORS_READ, users[n], text)
                        alike[n].append(block == read)
                        _, before = await recall(EXACT, users[n], text)
                        alike_before[n].append(block == before)
            k += per_round
        out.quoted = {n: sum(v) / len(v) for n, v in quoted.items()}
        out.same_block = {n: sum(v) / len(v) for n, v in alike.items()}
        out.same_as_before = {n: sum(v) / len(v) for n, v in alike_before.items()}
        candidates.EXACT_UP_TO, candidates.MIN_SHARE = exact_up_to, min_share
        candidates.BITS_FACTOR = bits
        await _days_named(engine, emb, users, out)
        for n, user in users.items():
            out.writes[n] = await _writes(engine, emb, user, seed=n)
    finally:
        candidates.EXACT_UP_TO, candidates.MIN_SHARE = exact_up_to, min_share
        candidates.BITS_FACTOR = bits
        await db.close()
        if mem0 is not None:
            mem0.close()
    return out


def day_questions(rng: random.Random, n: int) -> list[str]:
    """``n`` questions naming days, each form of :data:`DAY_FORMS` in turn."""
    return [DAY_FORMS[i % len(DAY_FORMS)].format(o=rng.choice(OBJECTS)) for i in range(n)]


def _exact_days(walk: candidates.Walk, window: str, routed: bool) -> str:
    """The days list as a user's with few episodes gets it: every vector of those days
    read (what a lifetime user got before)."""
    return _library_days(candidates.EXACT, window, routed)


_library_days = candidates._days


async def _days_named(
    engine: BeliefEngine, emb: PrecomputedEmbedder, users: dict[int, str], out: EpisodeScale
) -> None:
    """Questions naming days, at each scale, as the library reads them and with every
    vector of those days read (as before), the two taking turns."""
    texts = day_questions(random.Random(5), DAY_QUESTIONS)
    emb.prefill(texts)
    try:
        for n, user in users.items():
            for i, text in enumerate(texts[: len(DAY_FORMS)] + texts):
                for variant in (DAYS, DAYS_BEFORE) if i % 2 else (DAYS_BEFORE, DAYS):
                    candidates._days = _exact_days if variant == DAYS_BEFORE else _library_days
                    candidates._statement.cache_clear()
                    t = time.perf_counter()
                    await engine.recall(user, RecallRequest(text))
                    ms = (time.perf_counter() - t) * 1000.0
                    if i >= len(DAY_FORMS):  # the first few warm the plans
                        out.day_samples.setdefault(variant, {}).setdefault(n, []).append(ms)
    finally:
        candidates._days = _library_days
        candidates._statement.cache_clear()


def table(r: EpisodeScale) -> str:
    base = r.scales[0]
    rows = [
        f"| episodes of the user | recall | p50 ms | p95 ms | p99 ms | p95 / p95 at {base:,} |",
        "|---:|---|---:|---:|---:|---:|",
    ]
    for n in r.scales:
        for variant in (INDEX, EXACT, MEM0):
            if n not in r.samples.get(variant, {}):
                continue
            p50, p95, p99 = r.figures(variant, n)
            _, b95, _ = r.figures(variant, base)
            bold = "**" if variant == INDEX else ""
            rows.append(
                f"| {n:,} | {bold}{variant}{bold} | {p50:.2f} | {bold}{p95:.2f}{bold} | "
                f"{p99:.2f} | {p95 / b95:.2f} |"
            )
    rows += [
        "",
        "| episodes of the user | share of the table | vectors read by | exact top 50 found | "
        "blocks alike, vectors read | blocks alike, before | episodes in the block (mean) | "
        "write ms per episode p50 | p95 |",
        "|---:|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    for n in r.scales:
        w50, w95, _ = percentiles(r.writes[n])
        rows.append(
            f"| {n:,} | {n / r.rows:.1%} | {r.walks[n]} | {r.overlap[n]:.3f} | "
            f"{r.same_block[n]:.3f} | "
            f"{r.same_as_before[n]:.3f} | {r.quoted[n]:.1f} | {w50:.2f} | {w95:.2f} |"
        )
    rows += [
        "",
        "| episodes of the user | a question naming days | p50 ms | p95 ms | max ms |",
        "|---:|---|---:|---:|---:|",
    ]
    for n in r.scales:
        for variant in (DAYS, DAYS_BEFORE):
            got = r.day_samples.get(variant, {}).get(n)
            if got:
                p50, p95, _ = percentiles(got)
                rows.append(f"| {n:,} | {variant} | {p50:.2f} | {p95:.2f} | {max(got):.2f} |")
    return "\n".join(rows)


def note(r: EpisodeScale) -> str:
    failures = "; ".join(f"{k}: {v}" for k, v in r.failures.items()) or "none"
    return (
        f"Each scale: one user with {BELIEFS} beliefs and that many episodes, beside "
        f"{OTHERS} other users of {OTHER_EPISODES} episodes ({r.rows:,} episodes in all); "
        f"{r.rounds * r.per_round} timed recalls per scale and variant in {r.rounds} rounds "
        f"of {r.per_round} (every scale and variant in each round, the order rotating), after "
        "warm-up recalls; each recall the default request (`BeliefEngine.recall(user, "
        "RecallRequest(q))`: beliefs and episodes, 800 tokens, the block rendered), its "
        "query vector precomputed, wall time around the call in this process; a user past "
        f"{candidates.EXACT_UP_TO:,} episodes who holds at least {candidates.MIN_SHARE:.0%} "
        "of the table is read through the HNSW index over the episode vectors (iterative "
        "scan, `ef_search` 100), one who holds less by the sign bits of their vectors "
        "(`episodes_user_bits_idx`, read alone: the nearest "
        f"{candidates.BITS_FACTOR}× the pool by Hamming distance), the candidates "
        "re-ranked by exact distance either way, and the "
        f"full-text list scores at most {candidates.MAX_TEXT_MATCHES:,} of their episodes "
        "(the rarest words first); 'every vector read': the same with that bound lifted "
        "(every vector read, every match scored, as before). mem0: "
        "`Memory.search(q, user_id=..., limit=20)` in its own process over the same "
        "messages stored raw. The overlap: over 40 queries, the share of the exact nearest "
        f"{OVERLAP_K} of the user's episodes that the way they are read (HNSW or bits) "
        "returns; blocks alike: recalls "
        "whose block quotes the same episodes in the same order as the same recall's with the "
        "user's vectors read exactly (the index's or the bits' effect alone), and as before "
        "(that and the text bound's). "
        f"Questions naming days: {DAY_QUESTIONS} per scale, the forms "
        f"{', '.join(repr(f.format(o='…')) for f in DAY_FORMS)} in turn (the messages said "
        "over two years before the clock), each asked as the library reads it (for a user "
        f"past {candidates.EXACT_UP_TO:,} episodes, the days' episodes found by their bits, "
        "read as one range of the time said) and with each vector of those days read "
        "(before), the two taking turns, after one warm-up question of each form. "
        f"Writes: {WRITES} user messages per scale through `BeliefEngine.apply` (one episode "
        "each, its words counted, the index updated; vector precomputed). Index built after "
        f"the COPY in {r.build_s:.0f} s: {r.index_mb:.0f} MB beside the table's "
        f"{r.table_mb:.0f} MB; the bits' index {r.bits_mb:.0f} MB. "
        f"Loading took {r.load_s:.0f} s. Failures: {failures}."
    )


def summary(r: EpisodeScale, report: str) -> str:
    """The line README and docs/scale-out.md quote: what a user with a lifetime of
    messages costs (``report``: the link to the report from the quoting page)."""
    base, top = r.scales[0], r.scales[-1]
    _, b95, _ = r.figures(INDEX, base)
    _, t95, _ = r.figures(INDEX, top)
    w50 = percentiles(r.writes[top])[0]
    per_episode = r.total_mb * 2**20 / max(r.rows, 1)
    return (
        f"A user with {top:,} messages remembered (30 a day for nine years): recall "
        f"p95 {t95:.1f} ms against {b95:.1f} ms at {base:,}, a message written in "
        f"{w50:.1f} ms, {per_episode / 1024:.1f} kB stored per message with its indexes "
        f"(`python -m bench episodes`, [details]({report}#recall-latency-with-episodes))."
    )
