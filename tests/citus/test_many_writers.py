"""Four processes write for 200 users at once, and 50 writers for one user at a time.

Each process (``tests/citus/writer.py``) enqueues turns for every user while its worker,
one of four on one queue, claims and applies them; meanwhile 50 batches for each hot
user are applied concurrently, split over the processes. Every writer goes through the
coordinator, where the per-user advisory lock lives. Afterwards: every job done once,
every fact present, no fact active twice, the ledger consistent, the versions exact.
"""

from __future__ import annotations

import subprocess
import sys
from collections import Counter

import psycopg
import pytest

from mem01session.db import Database
from mem01session.embeddings import HashingEmbedder
from mem01session.engine import BeliefEngine
from mem01session.engine.ops import Op, Provenance
from tests.citus import writer
from tests.citus.cluster import require_cluster
from tests.reliability.harness import ROOT, check_invariants

require_cluster()
pytestmark = [pytest.mark.citus, pytest.mark.slow]  # slow: starts writer processes

PROCESSES = 4
USERS = 200
HOT_USERS = 2
WAYS = 50  # concurrent batches per hot user
SEED = "Was here before the writers"


def run_writers(url: str) -> None:
    children = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.citus.writer", url]
            + [str(n) for n in (proc, PROCESSES, USERS, HOT_USERS, WAYS)],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for proc in range(PROCESSES)
    ]
    try:
        for child in children:  # every process connected: release them together
            assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        for child in children:
            assert child.stdin is not None
            child.stdin.write("go\n")
            child.stdin.flush()
        for child in children:
            out, err = child.communicate(timeout=900)
            assert child.returncode == 0 and out.strip() == "done", err[-3000:]
    finally:
        for child in children:
            if child.poll() is None:
                child.kill()
                child.communicate()


def query(url: str, sql: str) -> list[tuple[object, ...]]:
    with psycopg.connect(url) as conn:
        return conn.execute(sql).fetchall()


async def test_four_processes_many_users_fifty_writers_per_user(
    db_url: str, db: Database, embedder: HashingEmbedder
) -> None:
    # The hot users exist already: the 50 writers race on the fact, not on registering
    # the user (a new user's row would hold back every writer but the first).
    engine = BeliefEngine(db, embedder)
    for h in range(HOT_USERS):
        await engine.apply(writer.hot_user(h), [Op.add(SEED)], provenance=Provenance())
    run_writers(db_url)

    assert query(db_url, "SELECT status, count(*) FROM memory_jobs GROUP BY 1") == [
        ("done", USERS * PROCESSES * 2)
    ]
    duplicates = query(
        db_url,
        "SELECT user_id, norm_content FROM beliefs WHERE status = 'active' "
        "GROUP BY 1, 2 HAVING count(*) > 1",
    )
    assert duplicates == []

    active: dict[str, set[str]] = {}
    for user_id, content, status in query(db_url, "SELECT user_id, content, status FROM beliefs"):
        assert status == "active"  # only ADDs and CONFIRMs were made
        active.setdefault(str(user_id), set()).add(str(content))
    ops = Counter(
        (str(u), str(op)) for u, op in query(db_url, "SELECT user_id, op FROM belief_events")
    )
    versions = dict(query(db_url, "SELECT user_id, version FROM memory_users"))
    for n in range(USERS):
        u = writer.user(n)
        expected = {writer.shared_fact(n)} | {writer.own_fact(n, p) for p in range(PROCESSES)}
        assert active[u] == expected, u  # nothing lost, nothing extra
        assert (ops[u, "ADD"], ops[u, "CONFIRM"]) == (1 + PROCESSES, PROCESSES - 1), u
        assert versions[u] == 2 * PROCESSES  # one batch per job
    for h in range(HOT_USERS):
        u = writer.hot_user(h)
        own = {writer.hot_fact(i % PROCESSES, i) for i in range(WAYS)}
        assert active[u] == {SEED, writer.HOT_SHARED} | own, u
        assert (ops[u, "ADD"], ops[u, "CONFIRM"]) == (2 + WAYS, WAYS - 1), u
        assert versions[u] == 1 + WAYS
    assert len(active) == USERS + HOT_USERS
    for u in active:
        await check_invariants(db.sa_engine, u, single_valued=())
