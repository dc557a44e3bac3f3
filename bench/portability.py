"""Export and import of a user with a lifetime of memory: ``python -m bench portability
[--records 100000]``.

On an embedded PostgreSQL, one user is given ``--records`` episodes, as many beliefs (one
in five superseded by the next, each with a provenance row pointing at an episode) and as
many ledger rows, written by SQL (the write path's own cost is measured elsewhere); a
second user holds one belief. Then, each as the command a user runs, in a process of its
own: ``mem01session export --user U -o FILE`` of the big user and of the small one, and
``mem01session import FILE`` of each into a fresh database. For each: wall time, records
per second, the process's peak resident memory (``ru_maxrss``), and how much more that is
than the same command's for the one-belief user (what the size of the memory costs).
The import embeds with the offline hashing embedder: what is measured is the document's
and the database's side; a model's embedding time comes on top (the embedder section of
docs/benchmarks.md gives MiniLM's texts per second).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import psycopg

from mem01session.db import migrate
from mem01session.embeddings import HashingEmbedder

from .common import Server

TITLE = "Export and import of a lifetime user"
ROOT = Path(__file__).resolve().parents[1]
EMBEDDER = HashingEmbedder(384)
BIG, SMALL = "lifetime", "newcomer"

_FILL = """
INSERT INTO memory_users (user_id, version, episodes, active_beliefs) VALUES (%(u)s, 1, %(n)s, 0);
INSERT INTO memory_jobs (user_id, session_id, payload, idempotency_key, status)
SELECT %(u)s, 'conv-' || (i / 30), '{"messages": [], "observed_at": "2026-01-01T00:00:00+00:00"}',
       'turn-' || i, 'done'
FROM generate_series(1, (%(n)s + 9) / 10) i;
INSERT INTO episodes (user_id, session_id, job_id, message, passage, role, content, said_at)
SELECT %(u)s, 'conv-' || (i / 300), j.id, (i %% 10), 0, 'user',
       'On day ' || (i / 30) || ' I said thing ' || i || ' about topic ' || (i %% 97)
       || ': the garden, the train, my sister and the new job.',
       timestamptz '2021-01-01 09:00+00' + i * interval '48 minutes'
FROM generate_series(1, %(n)s) i
JOIN memory_jobs j ON j.user_id = %(u)s AND j.idempotency_key = 'turn-' || ((i - 1) / 10 + 1);
INSERT INTO beliefs (user_id, content, norm_content, status, valid_from, valid_to, created_at,
                     updated_at)
SELECT %(u)s, 'Fact ' || i || ' about topic ' || (i %% 97),
       'fact ' || i || ' about topic ' || (i %% 97),
       CASE WHEN i %% 5 = 0 THEN 'superseded' ELSE 'active' END,
       timestamptz '2021-01-01 09:00+00' + i * interval '48 minutes',
       CASE WHEN i %% 5 = 0
            THEN timestamptz '2021-01-01 09:00+00' + (i + 1) * interval '48 minutes' END,
       timestamptz '2021-01-01 09:00+00' + i * interval '48 minutes',
       timestamptz '2021-01-01 09:00+00' + i * interval '48 minutes'
FROM generate_series(1, %(n)s) i;
UPDATE beliefs b SET superseded_by = b.id + 1 WHERE user_id = %(u)s AND status = 'superseded';
INSERT INTO belief_sources (user_id, belief_id, session_id, evidence, observed_at, extractor,
                            job_id, episode_id)
SELECT b.user_id, b.id, e.session_id, e.content, e.said_at, 'bench', e.job_id, e.id
FROM (SELECT id, user_id, row_number() OVER (ORDER BY id) AS n FROM beliefs WHERE user_id = %(u)s) b
JOIN (SELECT *, row_number() OVER (ORDER BY id) AS n FROM episodes WHERE user_id = %(u)s) e
  ON e.n = b.n;
INSERT INTO belief_events (user_id, op, belief_id, after, reason, created_at)
SELECT user_id, 'ADD', id, jsonb_build_object('id', id, 'content', content, 'extractor', 'bench'),
       'said so', valid_from
FROM beliefs WHERE user_id = %(u)s;
UPDATE memory_users SET active_beliefs = (SELECT count(*) FROM beliefs WHERE user_id = %(u)s
  AND status = 'active') WHERE user_id = %(u)s;
"""


@dataclass(frozen=True)
class Run:
    """One command: its records, wall time and peak resident memory."""

    records: int
    seconds: float
    peak_mb: float

    @property
    def rate(self) -> float:
        return self.records / self.seconds if self.seconds else 0.0


def fill(url: str, user: str, n: int) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        for statement in _FILL.split(";\n"):
            if statement.strip():
                conn.execute(statement, {"u": user, "n": n})


# The command as `mem01session` runs it, writing its peak resident memory (VmHWM, which
# counts from the interpreter's start: the ru_maxrss of a child keeps what the parent held
# when it forked) to $PEAK_FILE as it exits.
_PEAK = (
    "import atexit, os, re, sys\n"
    "def peak():\n"
    "    found = re.search(r'VmHWM:\\s+(\\d+)', open('/proc/self/status').read())\n"
    "    open(os.environ['PEAK_FILE'], 'w').write(found.group(1))\n"
    "atexit.register(peak)\n"
    "sys.argv[0] = 'mem01session'\n"
    "from mem01session.cli import main\n"
    "main()\n"
)


def command(url: str, *args: str) -> tuple[float, float, str]:
    """Run ``mem01session ARGS`` on ``url``: wall seconds, peak RSS in MB, its output."""
    env = dict(os.environ)
    env |= {"MEM01_DATABASE_URL": url, "MEM01_EMBEDDING_MODEL": EMBEDDER.name}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), env.get("PYTHONPATH", "")])
    with tempfile.TemporaryDirectory(prefix="mem01-port-run-") as tmp:
        peak_file = Path(tmp) / "peak"
        env["PEAK_FILE"] = str(peak_file)
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-c", _PEAK, *args], env=env, capture_output=True, text=True
        )
        seconds = time.perf_counter() - started
        if done.returncode != 0:
            raise RuntimeError(f"mem01session {' '.join(args)} failed: {done.stderr[-500:]}")
        peak_kb = int(peak_file.read_text())
    return seconds, peak_kb / 1024, done.stdout


def run(server: Server, records: int) -> dict[str, Run]:
    """Both commands for a user of ``records`` of each kind and for a one-belief user."""
    runs: dict[str, Run] = {}
    with tempfile.TemporaryDirectory(prefix="mem01-port-") as tmp:
        source = server.database("port_source")
        migrate.upgrade(source, embedding_dim=EMBEDDER.dim, embedding_model=EMBEDDER.name)
        fill(source, SMALL, 1)
        fill(source, BIG, records)
        for user in (SMALL, BIG):
            document = Path(tmp) / f"{user}.jsonl"
            seconds, peak, _ = command(source, "export", "--user", user, "-o", str(document))
            lines = sum(1 for _ in document.open())
            runs[f"export {user}"] = Run(lines - 2, seconds, peak)
            target = server.database(f"port_target_{user}")
            migrate.upgrade(target, embedding_dim=EMBEDDER.dim, embedding_model=EMBEDDER.name)
            seconds, peak, out = command(target, "import", str(document))
            if "imported 1 user(s)" not in out:
                raise RuntimeError(f"import of {user}: {out}")
            runs[f"import {user}"] = Run(lines - 2, seconds, peak)
    return runs


def table(runs: dict[str, Run]) -> str:
    rows = [
        "| command | records | wall (s) | records/s | peak RSS (MB) "
        "| more than for a one-belief user (MB) |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for verb in ("export", "import"):
        small, big = runs[f"{verb} {SMALL}"], runs[f"{verb} {BIG}"]
        for who, run in ((SMALL, small), (BIG, big)):
            growth = f"{run.peak_mb - small.peak_mb:.1f}" if who == BIG else "—"
            rows.append(
                f"| `mem01session {verb}` ({who}) | {run.records:,} | {run.seconds:.1f} | "
                f"{run.rate:,.0f} | {run.peak_mb:.1f} | {growth} |"
            )
    return "\n".join(rows)


def note(records: int) -> str:
    return (
        f"The lifetime user holds {records:,} episodes, {records:,} beliefs (a fifth of them "
        f"superseded) with a provenance row each, and {records:,} ledger rows; the newcomer one "
        "belief. Each command ran in its own process, as a user runs it (wall time includes "
        "the process's start, about a second); peak RSS is the process's high-water mark "
        "(`VmHWM`). The "
        f"import embedded with `{EMBEDDER.name}` (offline hashing): the time a model takes to "
        "embed the passages and statements comes on top (see the embedder section). Most of "
        "the import's time is PostgreSQL's, keeping the episodes' vector index (HNSW) up to "
        "date passage by passage, as for every write."
    )
