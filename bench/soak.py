"""Soak: the long variants of tests/reliability, with figures for docs/reliability.md.

    python -m bench.soak [--kills 50] [--outages 3] [--conversations 50]
        [--processes 4] [--users 200] [--erases 100] [--out docs/reliability.md]

* crashes: a child process talks (real Runner, Mem01Session, SQLite transcript, worker,
  rule extractor) and is SIGKILLed at a random one of five points (user item in the
  transcript, job enqueued, inside the extractor, between extraction and apply, inside
  the apply transaction); a fresh worker whose clock is past every lease resumes;
* outages: a private embedded PostgreSQL is stopped (pg_ctl) mid-conversation and
  started again while the conversation continues;
* concurrency: N conversations of one user in one process, and across P processes;
* 200 users in parallel, measuring each apply's lock wait and latency spread;
* erase while jobs are in flight, 100 rounds.

Every phase asserts what the tests assert (anything lost = 0); the figures are printed
and written to the ``--out`` file's "Soak figures" section.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")
for _var in ("OPENAI_API_KEY", "MEM01_DATABASE_URL", "DATABASE_URL", "OPENAI_BASE_URL"):
    os.environ.pop(_var, None)

from agents.memory import SQLiteSession  # noqa: E402
from tests.pg import create_database, test_server, with_database  # noqa: E402
from tests.reliability.harness import (  # noqa: E402
    ScratchServer,
    check_invariants,
    counts,
    crash_campaign,
    fact_line,
    place_name,
    say,
)
from tests.reliability.test_erase_race import STAGES, erase_round  # noqa: E402

from mem01session import Mem01Session, Memory  # noqa: E402
from mem01session.db import Database, migrate  # noqa: E402
from mem01session.embeddings import HashingEmbedder  # noqa: E402
from mem01session.engine import BeliefEngine  # noqa: E402
from mem01session.engine.ops import Op, Provenance  # noqa: E402
from mem01session.extraction import RuleExtractor  # noqa: E402
from mem01session.queue.worker import WorkerPolicy  # noqa: E402
from mem01session.session import session_health  # noqa: E402

DIM = 64
CONCURRENT_CHILD = """
import asyncio, sys
from agents.memory import SQLiteSession
from mem01session.db import Database
from mem01session.embeddings import HashingEmbedder
from mem01session.engine import BeliefEngine
from mem01session.extraction import RuleExtractor
from mem01session import Memory, Mem01Session
from mem01session.session import session_health
from tests.reliability.harness import say

async def main(url, folder, proc, n):
    emb = HashingEmbedder(64)
    db = await Database.open(url=url, embedding_model=emb.name, embedding_dim=64)
    memory = Memory(engine=BeliefEngine(db, emb), extractor=RuleExtractor())
    cities = ("Lisbon", "Porto", "Faro")
    sessions = [Mem01Session(f"p{proc}-c{i}", "quinn",
        inner=SQLiteSession(f"p{proc}-c{i}", f"{folder}/t{proc}.sqlite"),
        memory=memory) for i in range(n)]
    async def talk(i, s):
        await say(s, "I have a dog named Rex.")
        await say(s, f"I live in {cities[(i + proc) % 3]}.")
        await say(s, "I have a dog named Rex.")
    async with asyncio.timeout(600):
        await asyncio.gather(*(talk(i, s) for i, s in enumerate(sessions)))
        assert all([await s.flush_memory(timeout=300) for s in sessions])
    for s in sessions:
        assert s.last_memory_error is None, s.last_memory_error
        await s.aclose()
    await memory.aclose()
    await db.close()
    print("ok", flush=True)

asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])))
"""


async def fresh_db(admin: str, template: str) -> tuple[str, Database]:
    url = with_database(admin, create_database(admin, template=template))
    emb = HashingEmbedder(DIM)
    return url, await Database.open(url=url, embedding_model=emb.name, embedding_dim=DIM)


async def soak_crashes(admin: str, template: str, kills: int, folder: Path) -> dict[str, Any]:
    url, db = await fresh_db(admin, template)
    started = time.monotonic()
    report = await crash_campaign(
        url, db.sa_engine, HashingEmbedder(DIM), folder, kills=kills, seed=1
    )
    await db.close()
    return {
        "kills survived": report.kills,
        "kills per point": dict(sorted((report.phases or {}).items())),
        "turns attempted": report.turns_attempted,
        "turns accepted": report.turns_accepted,
        "facts applied (exactly once)": report.facts_applied,
        "jobs resumed by a fresh worker": report.resumed_jobs,
        "accepted turns lost": report.lost,
        "seconds": round(time.monotonic() - started, 1),
    }


async def soak_outages(outages: int, turns_per_phase: int, folder: Path) -> dict[str, Any]:
    srv = ScratchServer()
    try:
        emb = HashingEmbedder(DIM)
        migrate.upgrade(srv.url, embedding_dim=DIM, embedding_model=emb.name)
        db = await Database.open(url=srv.url, embedding_model=emb.name, embedding_dim=DIM)
        engine = BeliefEngine(db, emb)
        memory = Memory(
            engine=engine,
            extractor=RuleExtractor(),
            worker_policy=WorkerPolicy(poll_interval=0.05),
        )
        session = Mem01Session(
            "conv",
            "otto",
            inner=SQLiteSession("conv", folder / "o.sqlite"),
            memory=memory,
            recall_wait=0.2,
        )
        n = 0
        said: list[int] = []
        answered = errors = 0
        started = time.monotonic()
        for _ in range(outages):
            for _ in range(turns_per_phase):
                await say(session, fact_line(n)[0])
                said.append(n)
                n += 1
                answered += 1
            srv.stop()
            for _ in range(turns_per_phase):
                await say(session, fact_line(n)[0])
                said.append(n)
                n += 1
                answered += 1
                errors += session.last_memory_error is not None
            srv.start()
            assert await session.flush_memory(timeout=120), "did not catch up"
        history = {b.content for b in await engine.history("otto", limit=10_000)}
        lost = [k for k in said if fact_line(k)[1] not in history]
        await check_invariants(db.sa_engine, "otto")
        await session.aclose()
        await memory.aclose()
        await db.close()
        assert not lost, lost
        return {
            "outages survived (server stopped and started)": srv.stops,
            "runs answered": answered,
            "runs during outages with last_memory_error set": errors,
            "turns said / applied after catch-up": f"{len(said)} / {len(said) - len(lost)}",
            "accepted turns lost": len(lost),
            "dropped from the in-memory buffer": session_health(session).dropped_turns,
            "seconds": round(time.monotonic() - started, 1),
        }
    finally:
        srv.close()


async def soak_conversations(
    admin: str, template: str, n: int, procs: int, folder: Path
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    # One process.
    url, db = await fresh_db(admin, template)
    emb = HashingEmbedder(DIM)
    memory = Memory(engine=BeliefEngine(db, emb), extractor=RuleExtractor())
    cities = ("Lisbon", "Porto", "Faro")
    sessions = [
        Mem01Session(
            f"c{i}", "uma", inner=SQLiteSession(f"c{i}", folder / "c.sqlite"), memory=memory
        )
        for i in range(n)
    ]

    async def talk(i: int, s: Mem01Session) -> None:
        await say(s, "I have a dog named Rex.")
        await say(s, f"I live in {cities[i % 3]}.")
        await say(s, "I have a dog named Rex.")

    started = time.monotonic()
    async with asyncio.timeout(600):
        await asyncio.gather(*(talk(i, s) for i, s in enumerate(sessions)))
        assert all([await s.flush_memory(timeout=300) for s in sessions])
    rows = await check_invariants(db.sa_engine, "uma")
    active = [r.content for r in rows if r.status == "active"]
    assert active.count("Has a dog named Rex") == 1
    out[f"{n} conversations, 1 process: seconds"] = round(time.monotonic() - started, 1)
    out[f"{n} conversations, 1 process: turns"] = 3 * n
    out[f"{n} conversations, 1 process: active beliefs / ledger events"] = (
        f"{len(active)} / {(await counts(db.sa_engine, 'uma'))['belief_events']}"
    )
    for s in sessions:
        await s.aclose()
    await memory.aclose()
    await db.close()
    # Several processes.
    url, db = await fresh_db(admin, template)
    per = max(1, n // procs)
    started = time.monotonic()
    children = [
        subprocess.Popen(
            [sys.executable, "-c", CONCURRENT_CHILD, url, str(folder), str(p), str(per)],
            cwd=str(ROOT),
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for p in range(procs)
    ]
    for child in children:
        stdout, stderr = child.communicate(timeout=900)
        assert child.returncode == 0 and "ok" in stdout, stderr[-3000:]
    rows = await check_invariants(db.sa_engine, "quinn")
    active = [r.content for r in rows if r.status == "active"]
    assert active.count("Has a dog named Rex") == 1
    ledger = await counts(db.sa_engine, "quinn")
    out[f"{per * procs} conversations across {procs} processes: seconds"] = round(
        time.monotonic() - started, 1
    )
    out[f"{per * procs} conversations across {procs} processes: turns"] = 3 * per * procs
    out[f"{per * procs} conversations across {procs} processes: active / ledger events"] = (
        f"{len(active)} / {ledger['belief_events']}"
    )
    out["duplicate active beliefs / several active home cities"] = "0 / 0"
    await db.close()
    return out


async def soak_users(admin: str, template: str, users: int) -> dict[str, Any]:
    url, db = await fresh_db(admin, template)
    emb = HashingEmbedder(DIM)
    db2 = await Database.open(url=url, embedding_model=emb.name, embedding_dim=DIM, pool_size=20)
    engine = BeliefEngine(db2, emb)
    latencies: list[float] = []
    waits: list[float] = []

    async def one(i: int) -> None:
        user = f"tenant-{i}"
        t0 = time.perf_counter()
        async with db2.sa_engine.begin() as conn:
            from mem01session.engine.users import lock_user

            await lock_user(conn, user)
            waits.append(time.perf_counter() - t0)
        t1 = time.perf_counter()
        await engine.apply(
            user,
            [Op.add(f"Lives in {place_name(i)}", key="home.city")],
            provenance=Provenance(extractor="soak"),
        )
        latencies.append(time.perf_counter() - t1)
        result = await engine.recall(user, "where do I live")
        assert {b.belief.user_id for b in result.beliefs} == {user}
        assert result.text.count("Lives in") == 1 and place_name(i) in result.text

    started = time.monotonic()
    await asyncio.gather(*(one(i) for i in range(users)))
    total = time.monotonic() - started
    await db2.close()
    await db.close()

    def ms(values: list[float], q: float) -> float:
        return round(statistics.quantiles(values, n=100)[int(q) - 1] * 1000, 1)

    return {
        "users in parallel": users,
        "cross-user results": 0,
        "user-lock wait p50 / p99 / max (ms)": (
            f"{ms(waits, 50)} / {ms(waits, 99)} / {round(max(waits) * 1000, 1)}"
        ),
        "apply latency p50 / p99 / max (ms)": (
            f"{ms(latencies, 50)} / {ms(latencies, 99)} / {round(max(latencies) * 1000, 1)}"
        ),
        "seconds": round(total, 1),
    }


async def soak_erases(admin: str, template: str, rounds: int) -> dict[str, Any]:
    _, db = await fresh_db(admin, template)
    emb = HashingEmbedder(DIM)
    started = time.monotonic()
    for i in range(rounds):
        after = await erase_round(db, emb, i, STAGES[i % 3], reinstate=bool(i // 3 % 2))
        assert sum(after.values()) == 1, after  # only the tombstone
    await db.close()
    return {
        "erase rounds (in extractor / in apply transaction / queued)": rounds,
        "rows left or reappeared after the receipt": 0,
        "seconds": round(time.monotonic() - started, 1),
    }


NOTES = """Notes on the figures: "facts applied" can exceed "turns accepted" because a turn
killed after its job was enqueued (but before `Runner.run` returned) is still applied,
once; a turn killed with only the user item in the transcript was never accepted and
leaves no job (the input is held until its answer is stored). The "user-lock wait" of the
200-user phase times `pg_advisory_xact_lock` on distinct users *including the wait for a
pooled connection* (pool of 20 + 40 overflow for 200 concurrent tasks on 2 CPUs): it
measures pool queueing, not one user waiting on another's lock (each user has a distinct
64-bit lock key). The 4-process phase runs 12 conversations per process (48 in all).
"""


def write_doc(path: Path, command: str, sections: dict[str, dict[str, Any]]) -> None:
    lines = [
        "## Soak figures",
        "",
        f"Command: `{command}`",
        "",
        f"Run on {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
        f"{os.cpu_count()} CPUs, embedded PostgreSQL, offline embedder, rule extractor.",
        "",
    ]
    for title, figures in sections.items():
        lines += [f"### {title}", "", "| figure | value |", "|---|---|"]
        lines += [f"| {k} | {v} |" for k, v in figures.items()]
        lines.append("")
    lines.append(NOTES)
    text = path.read_text() if path.exists() else "# Reliability\n\n"
    head = text.split("## Soak figures")[0].rstrip() + "\n\n"
    path.write_text(head + "\n".join(lines))


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--kills", type=int, default=50)
    ap.add_argument("--outages", type=int, default=3)
    ap.add_argument("--conversations", type=int, default=50)
    ap.add_argument("--processes", type=int, default=4)
    ap.add_argument("--users", type=int, default=200)
    ap.add_argument("--erases", type=int, default=100)
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "reliability.md")
    args = ap.parse_args()
    command = " ".join(["python -m bench.soak", *sys.argv[1:]])
    folder = Path(tempfile.mkdtemp(prefix="mem01-soak-"))
    sections: dict[str, dict[str, Any]] = {}
    with test_server() as admin:
        template = create_database(admin)
        migrate.upgrade(
            with_database(admin, template),
            embedding_dim=DIM,
            embedding_model=HashingEmbedder(DIM).name,
        )
        runs: tuple[tuple[str, Callable[[], Awaitable[dict[str, Any]]]], ...] = (
            (
                "Crash after the answer (SIGKILL)",
                lambda: soak_crashes(admin, template, args.kills, folder),
            ),
            ("PostgreSQL outage", lambda: soak_outages(args.outages, 5, folder)),
            (
                "Concurrent conversations of one user",
                lambda: soak_conversations(
                    admin, template, args.conversations, args.processes, folder
                ),
            ),
            ("Users in parallel", lambda: soak_users(admin, template, args.users)),
            ("Erase while jobs are in flight", lambda: soak_erases(admin, template, args.erases)),
        )
        for title, run in runs:
            print(f"== {title}", flush=True)
            sections[title] = await run()
            for k, v in sections[title].items():
                print(f"   {k}: {v}", flush=True)
    write_doc(args.out, command, sections)
    print(f"figures written to {args.out}")


if __name__ == "__main__":
    asyncio.run(main())
