"""Export and import of a user with a lifetime of memory:
``python -m bench.portability [--records 100000] [--out docs/benchmarks.md]``.

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
docs/benchmarks.md gives MiniLM's texts per second). Writes the section "Export and
import of a lifetime user" of ``--out``.
"""

from __future__ import annotations

import argparse
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

from .common import embedded_server, machine, replace_section

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
                conn.execute(statement, {"u": user, "n": n})  # type: ignore[call-overload]


def command(url: str, *args: str) -> tuple[float, float, str]:
    """Run ``mem01session ARGS`` on ``url``: wall seconds, peak RSS in MB, its output."""
    env = dict(os.environ)
    env |= {"MEM01_DATABASE_URL": url, "MEM01_EMBEDDING_MODEL": EMBEDDER.name}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), env.get("PYTHONPATH", "")])
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        started = time.perf_counter()
        child = subprocess.Popen(
            [sys.executable, "-m", "mem01session", *args], env=env, stdout=out, stderr=err
        )
        _, status, usage = os.wait4(child.pid, 0)  # the child's own resource usage
        seconds = time.perf_counter() - started
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        said, failed = out.read(), err.read()
    if child.returncode != 0:
        raise RuntimeError(f"mem01session {' '.join(args)} failed: {failed.strip()[-500:]}")
    return seconds, usage.ru_maxrss / 1024, said


def measure(records: int) -> dict[str, Run]:
    runs: dict[str, Run] = {}
    with embedded_server() as server, tempfile.TemporaryDirectory(prefix="mem01-port-") as tmp:
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
        facts = machine(server)
    runs["__machine__"] = Run(0, 0, 0)
    measure.facts = facts  # type: ignore[attr-defined]
    return runs


def section(runs: dict[str, Run], records: int, cmd: str) -> str:
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
    note = (
        f"The lifetime user holds {records:,} episodes, {records:,} beliefs (a fifth of them "
        f"superseded) with a provenance row each, and {records:,} ledger rows; the newcomer one "
        "belief. Each command ran in its own process, as a user runs it (wall time includes "
        "the process's start, about a second); peak RSS is the process's `ru_maxrss`. The "
        f"import embedded with `{EMBEDDER.name}` (offline hashing): the time a model takes to "
        "embed the passages and statements comes on top (see the embedder section). "
        f"Machine: {getattr(measure, 'facts', '?')}."
    )
    return f"## {TITLE}\n\nCommand: `{cmd}`\n\n" + "\n".join(rows) + f"\n\n{note}\n"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.portability")
    ap.add_argument("--records", type=int, default=100_000)
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "benchmarks.md")
    args = ap.parse_args(argv)
    cmd = " ".join(["python -m bench.portability", *(sys.argv[1:] if argv is None else argv)])
    runs = measure(args.records)
    text = section(runs, args.records, cmd)
    print(text)
    doc = args.out.read_text() if args.out.exists() else "# Benchmarks\n"
    args.out.write_text(replace_section(doc, TITLE, text))


if __name__ == "__main__":
    main()
