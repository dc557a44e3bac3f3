"""Synthetic beliefs for the latency benchmarks, COPY'd in the shape the write path makes.

Deterministic: the same plan and seed give the same rows, for every system. Used by
``bench latency`` and the scale-out benchmark.
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import psycopg

from mem01session.engine import BeliefEngine, RecallRequest, near
from mem01session.engine.records import normalize_content

from .common import (
    PrecomputedEmbedder,
    vector_binary,
)

NOW = datetime(2026, 6, 1, tzinfo=UTC)

VERBS = (
    "Likes", "Dislikes", "Owns", "Wants to learn", "Works with", "Is allergic to",
    "Collects", "Often talks about", "Is planning a trip involving", "Recently bought",
)  # fmt: skip
OBJECTS = tuple(
    """hiking sailing pottery chess jazz violins espresso sourdough tomatoes orchids kayaks
    telescopes sushi tango marathons yoga watercolor origami climbing cycling surfing
    skiing archery fencing golf tennis badminton rowing snowboarding birdwatching
    gardening beekeeping knitting woodworking photography calligraphy astronomy poetry
    opera theater cinema anime podcasts vinyl cassettes typewriters fountain-pens
    mushrooms cheese wine whisky tea matcha chocolate pastries dumplings tacos curry
    ramen pizza bagels pretzels falafel kimchi paella risotto lasagna goulash borscht
    cats dogs parrots horses ferrets hamsters tortoises goldfish rabbits alpacas
    Python Rust Haskell Kubernetes Linux databases robotics drones rockets satellites
    Berlin Lisbon Kyoto Oslo Lima Nairobi Hanoi Montreal Reykjavik Tasmania
    mountains deserts islands volcanoes glaciers rainforests canyons lakes rivers caves
    guitars pianos drums cellos flutes harps accordions banjos trumpets saxophones
    novels comics biographies atlases encyclopedias magazines zines journals maps stamps
    coins watches sneakers hats scarves umbrellas backpacks bicycles motorcycles vans""".split()
)
MODIFIERS = (
    "on weekends", "since childhood", "with friends", "at work", "every summer",
    "in the evenings", "with family", "for relaxation", "as a side project", "on holidays",
    "when travelling", "during winter", "with a local club", "after work", "online",
    "with colleagues", "for health reasons", "since last year", "with a partner", "alone",
)  # fmt: skip
QUERY_FORMS = (
    "what do you know about {o}?",
    "any tips on {o} {m}",
    "does the user care about {o}",
    "remind me what I said regarding {o}",
    "plan something with {o} and {o2}",
)


def fact(rng: random.Random) -> str:
    return f"{rng.choice(VERBS)} {rng.choice(OBJECTS)} {rng.choice(MODIFIERS)}"


def queries(rng: random.Random, n: int) -> list[str]:
    return [
        rng.choice(QUERY_FORMS).format(
            o=rng.choice(OBJECTS), o2=rng.choice(OBJECTS), m=rng.choice(MODIFIERS)
        )
        for _ in range(n)
    ]


def user_facts(rng: random.Random, count: int) -> list[str]:
    seen: dict[str, None] = {}
    while len(seen) < count:
        seen.setdefault(fact(rng), None)
    return list(seen)


Row = tuple[str, str, str, float, datetime, datetime | None]


def synthetic_rows(plan: Sequence[tuple[str, int]], seed: int = 7) -> list[Row]:
    """(user, text, status, confidence, valid_from, valid_to) for each planned belief.

    Deterministic: the same plan and seed give the same rows, for every system.
    """
    rng = random.Random(seed)
    rows: list[Row] = []
    for user_id, count in plan:
        for text in user_facts(rng, count):
            start = NOW - timedelta(days=rng.uniform(0, 730))
            ended = rng.random() < 0.1
            end = start + timedelta(days=rng.uniform(1, 60)) if ended else None
            status = "superseded" if ended else "active"
            rows.append((user_id, text, status, round(rng.uniform(0.5, 1.0), 2), start, end))
    return rows


def copy_rows(url: str, embedder: PrecomputedEmbedder, rows: Sequence[Row]) -> int:
    """COPY rows into this project's ``beliefs`` with one source each, then ANALYZE."""
    with psycopg.connect(url) as conn, conn.cursor() as cur:
        with cur.copy(
            "COPY beliefs (user_id, content, norm_content, status, confidence, valid_from, "
            "valid_to, updated_at, embedding, embedding_model) FROM STDIN (FORMAT BINARY)"
        ) as copy:
            copy.set_types(
                ["text", "text", "text", "text", "float8", "timestamptz", "timestamptz",
                 "timestamptz", "bytea", "text"]
            )  # fmt: skip
            for user_id, text, status, conf, start, end in rows:
                embedder.prefill([text])
                vec = vector_binary(embedder.cache[text])
                copy.write_row(
                    (user_id, text, normalize_content(text), status, conf, start, end,
                     end or start, vec, embedder.name)
                )  # fmt: skip
        cur.execute(
            "INSERT INTO belief_sources (user_id, belief_id, session_id, evidence, observed_at,"
            " extractor) SELECT b.user_id, b.id, 'sess-' || (b.id % 97), 'I said: ' || b.content,"
            " b.valid_from, 'bench' FROM beliefs b WHERE NOT EXISTS (SELECT 1 FROM belief_sources"
            " s WHERE s.user_id = b.user_id AND s.belief_id = b.id)"
        )
        # The word counts the write path keeps (recall weighs words by them), recounted.
        cur.execute("DELETE FROM belief_terms")
        cur.execute(
            "INSERT INTO belief_terms (user_id, lexeme, beliefs) SELECT b.user_id, t.lexeme,"
            " count(*) FROM beliefs b, unnest(tsvector_to_array(b.tsv)) AS t(lexeme)"
            " WHERE b.status = 'active' GROUP BY b.user_id, t.lexeme"
        )
        # The near-duplicate links the write path makes with each vector, made for all.
        cur.execute(
            "INSERT INTO belief_twins (user_id, belief_id, twin_id) SELECT a.user_id, a.id, b.id"
            " FROM beliefs a JOIN beliefs b ON b.user_id = a.user_id AND b.id <> a.id"
            " AND b.embedding_model = a.embedding_model"
            " WHERE (a.embedding <=> b.embedding) <= %s ON CONFLICT DO NOTHING",
            (near.MAX_DISTANCE,),
        )
        cur.execute(
            "INSERT INTO memory_users (user_id, active_beliefs) SELECT user_id, count(*)"
            " FROM beliefs WHERE status = 'active' GROUP BY user_id ON CONFLICT (user_id)"
            " DO UPDATE SET active_beliefs = EXCLUDED.active_beliefs"
        )
        conn.commit()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("VACUUM (ANALYZE) beliefs")
        conn.execute("VACUUM (ANALYZE) belief_terms")
        conn.execute("VACUUM (ANALYZE) belief_sources")
    return len(rows)


async def time_recalls(
    engine: BeliefEngine, users: list[str], texts: list[str], n: int, warmup: int
) -> tuple[list[float], float, int]:
    """Latencies in ms of ``n`` sequential recalls after ``warmup`` untimed ones."""
    samples: list[float] = []
    tokens = 0
    for i in range(warmup + n):
        user, query = users[i % len(users)], texts[i % len(texts)]
        started = time.perf_counter()
        result = await engine.recall(user, RecallRequest(query, max_tokens=800))
        elapsed = (time.perf_counter() - started) * 1000.0
        if i >= warmup:
            samples.append(elapsed)
            tokens += result.tokens
    return samples, tokens / n, len(samples)
