"""``python -m bench episodes``: what a recall costs as one user's episodes grow.

One user per scale, each with the same 100 synthetic beliefs and N synthetic episodes
(first-person sentences of 12-25 words, said over two years), COPY'd in the shape the write
path makes (vector named by its model, word counts in ``episode_terms``). Then the default
recall (``BeliefEngine.recall``: beliefs and episodes, 800 tokens) is timed in rounds in
which every scale takes its turn, the order rotating, so that a slow spell of the machine
falls on all of them alike. Query vectors are precomputed: the figures are the read path
from the statements to the rendered block, without the query's embedding.
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import timedelta

import psycopg

from mem01session.db import Database, migrate
from mem01session.engine import BeliefEngine, RecallRequest

from .common import PrecomputedEmbedder, Server, percentiles, vector_binary
from .synthetic import MODIFIERS, NOW, OBJECTS, copy_rows, queries, synthetic_rows

SCALES = (300, 3000, 30000)
BELIEFS = 100
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


def copy_episodes(url: str, emb: PrecomputedEmbedder, user: str, count: int, seed: int) -> None:
    """COPY ``count`` episodes for ``user``, then recount their words as the write path
    keeps them."""
    rng = random.Random(seed)
    texts = [said(rng) for _ in range(count)]
    emb.prefill(texts)
    with psycopg.connect(url) as conn, conn.cursor() as cur:
        with cur.copy(
            "COPY episodes (user_id, session_id, job_id, message, passage, role, content, "
            "said_at, embedding, embedding_model) FROM STDIN (FORMAT BINARY)"
        ) as copy:
            copy.set_types(
                ["text", "text", "int8", "int2", "int2", "text", "text", "timestamptz",
                 "bytea", "text"]
            )  # fmt: skip
            for i, text in enumerate(texts):
                when = NOW - timedelta(days=rng.uniform(0, 730))
                copy.write_row(
                    (user, f"chat-{i // 20}", i + 1, 0, 0, "user", text, when,
                     vector_binary(emb.cache[text]), emb.name)
                )  # fmt: skip
        cur.execute(
            "INSERT INTO episode_terms (user_id, lexeme, episodes) SELECT e.user_id, t.lexeme, "
            "count(*) FROM episodes e, unnest(tsvector_to_array(e.tsv)) AS t(lexeme) "
            "WHERE e.user_id = %s GROUP BY e.user_id, t.lexeme",
            (user,),
        )
        cur.execute("UPDATE memory_users SET episodes = %s WHERE user_id = %s", (count, user))
        conn.commit()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("VACUUM (ANALYZE) episodes")
        conn.execute("VACUUM (ANALYZE) episode_terms")


@dataclass
class EpisodeScale:
    """Recall latency (ms) per number of episodes of the user."""

    scales: tuple[int, ...]
    rounds: int
    per_round: int
    samples: dict[int, list[float]] = field(default_factory=dict)
    quoted: dict[int, float] = field(default_factory=dict)  # episodes in the block, mean
    load_s: float = 0.0

    def figures(self, scale: int) -> tuple[float, float, float]:
        return percentiles(self.samples[scale])


async def run(
    server: Server,
    emb: PrecomputedEmbedder,
    scales: Sequence[int] = SCALES,
    *,
    rounds: int = 10,
    per_round: int = 20,
    warmup: int = 20,
) -> EpisodeScale:
    started = time.perf_counter()
    url = server.database("episode_scale")
    migrate.upgrade(url, embedding_dim=emb.dim, embedding_model=emb.name)
    users = {n: f"episodes-{n}" for n in scales}
    copy_rows(url, emb, synthetic_rows([(u, BELIEFS) for u in users.values()], seed=11))
    for n, user in users.items():
        copy_episodes(url, emb, user, n, seed=n)
    out = EpisodeScale(tuple(scales), rounds, per_round, load_s=time.perf_counter() - started)
    texts = queries(random.Random(3), 200)
    emb.prefill(texts)
    db = await Database.open(url=url, embedding_model=emb.name, embedding_dim=emb.dim)
    try:
        engine = BeliefEngine(db, emb, clock=lambda: NOW)
        for user in users.values():  # warm the caches and the plans
            for i in range(warmup):
                await engine.recall(user, RecallRequest(texts[i % len(texts)]))
        quoted: dict[int, list[int]] = {n: [] for n in scales}
        order = list(scales)
        k = 0
        for _ in range(rounds):
            order = order[1:] + order[:1]
            for n in order:
                for _ in range(per_round):
                    request = RecallRequest(texts[k % len(texts)])
                    k += 1
                    t = time.perf_counter()
                    result = await engine.recall(users[n], request)
                    out.samples.setdefault(n, []).append((time.perf_counter() - t) * 1000.0)
                    quoted[n].append(len(result.episodes))
        out.quoted = {n: sum(v) / len(v) for n, v in quoted.items()}
    finally:
        await db.close()
    return out


def table(r: EpisodeScale) -> str:
    base = r.scales[0]
    rows = [
        "| episodes of the user | p50 ms | p95 ms | p99 ms | p50 / p50 at "
        f"{base:,} | p95 / p95 at {base:,} | episodes in the block (mean) |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    b50, b95, _ = r.figures(base)
    for n in r.scales:
        p50, p95, p99 = r.figures(n)
        rows.append(
            f"| {n:,} | {p50:.2f} | {p95:.2f} | {p99:.2f} | {p50 / b50:.2f} | "
            f"{p95 / b95:.2f} | {r.quoted[n]:.1f} |"
        )
    return "\n".join(rows)


def note(r: EpisodeScale) -> str:
    return (
        f"Each scale: one user with {BELIEFS} beliefs and that many episodes; "
        f"{r.rounds * r.per_round} timed recalls per scale in {r.rounds} rounds of "
        f"{r.per_round} (every scale in each round, the order rotating), after warm-up "
        "recalls; each recall the default request (`BeliefEngine.recall(user, "
        "RecallRequest(q))`: beliefs and episodes, 800 tokens), its query vector "
        "precomputed; wall time around the call, in this process. Loading took "
        f"{r.load_s:.0f} s. An idle machine: nothing else ran."
    )
