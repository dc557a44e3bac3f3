"""``python -m bench.scale_out``: the figures of docs/scale-out.md, and the doc's sections.

* **When to move** (one embedded PostgreSQL): recall p50/p95 as the beliefs of one user
  grow (one user of each size among 1,000 ordinary users), and as the total grows at 100
  beliefs per user; where p95 first passes 10 ms.
* **Measured on the local cluster** (``--citus URL``, default ``MEM01_CITUS_URL``: a
  coordinator, e.g. from ``scripts/citus-cluster.sh up``): the same users and beliefs on
  one embedded server and on a fresh database of the cluster (distributed by the library's
  migrations); recall p50/p95 through the coordinator against the single server; jobs
  applied per second with one and with four worker processes on each.

Each part rewrites its section of ``--doc`` (docs/scale-out.md) with the command it ran.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import psycopg

from .common import Server, embedded_server, machine, make_embedder, replace_section
from .scale_data import Timing, load, ordinary_users, time_recall
from .scale_workers import Drain, drain

ROOT = Path(__file__).resolve().parents[1]
THRESHOLD_MS = 10.0
PER_USER = 100
SHARED_BOX = (
    "**This 2-core machine**: the single server, the three cluster nodes (coordinator and "
    "two workers) and the benchmark's own processes all share the same two cores, so the "
    "cluster cannot run faster than one server here: it pays the coordinator hop and the "
    "extra processes without gaining a CPU. The figures show what a hop costs and that the "
    "behaviour is right, not what a cluster of real machines would do."
)


def _load() -> str:
    """The machine's load average (1, 5, 15 min): other work shares these cores."""
    return " / ".join(f"{x:.1f}" for x in os.getloadavg())


def _ms(t: Timing) -> str:
    return f"{t.p50:.2f} / {t.p95:.2f}"


def _crossing(points: Sequence[tuple[int, Timing]], unit: str) -> str:
    """Where p95 first passes the threshold, in words computed from the points."""
    # Compared as shown (two decimals), so that the sentence agrees with the table.
    below = [n for n, t in points if round(t.p95, 2) <= THRESHOLD_MS]
    above = [(n, t) for n, t in points if round(t.p95, 2) > THRESHOLD_MS]
    if not above:
        return (
            f"p95 stayed under {THRESHOLD_MS:.0f} ms up to the largest point measured "
            f"({points[-1][0]:,} {unit})"
        )
    n, t = above[0]
    lower = max((b for b in below if b < n), default=None)
    after = f" (last point under it: {lower:,})" if lower is not None else ""
    return f"p95 first passed {THRESHOLD_MS:.0f} ms at {n:,} {unit}: {t.p95:.2f} ms{after}"


async def _when(args: argparse.Namespace, server: Server) -> str:
    emb = make_embedder("offline", args.dim)
    sizes = [int(s) for s in args.sizes.split(",")]
    totals = [int(s) for s in args.totals.split(",")]
    per_user: list[tuple[int, Timing]] = []
    by_total: list[tuple[int, Timing]] = []
    load_before = _load()
    facts = machine(server)
    url = server.database("scale_per_user")
    plan = [(u, PER_USER) for u in ordinary_users(1000)]
    plan += [(f"size-{n}", n) for n in sizes if n != PER_USER]
    started = time.perf_counter()
    loaded = load(url, emb, plan)
    print(f"  per-user database: {loaded:,} beliefs in {time.perf_counter() - started:.0f} s")
    for n in sizes:
        recalled = ordinary_users(1000) if n == PER_USER else [f"size-{n}"]
        t = await time_recall(url, emb, recalled, calls=args.calls, warmup=args.warmup)
        per_user.append((n, t))
        print(f"  {n:,} beliefs/user: p50/p95 {_ms(t)} ms", flush=True)
    url = server.database("scale_total")
    users: list[str] = []
    for total in totals:
        step = ordinary_users(total // PER_USER)[len(users) :]
        load(url, emb, [(u, PER_USER) for u in step], seed=len(users))
        users += step
        t = await time_recall(url, emb, users, calls=args.calls, warmup=args.warmup)
        by_total.append((len(users) * PER_USER, t))
        print(f"  {len(users) * PER_USER:,} beliefs in all: p50/p95 {_ms(t)} ms", flush=True)
    lines = [
        "## When to move (measured)",
        "",
        f"Command: `{args.command}`",
        "",
        f"**This 2-core machine** ({facts}; {args.dim}-d offline-embedder vectors), shared "
        f"with other work: load average {load_before} before the run, {_load()} after it. "
        "One embedded server. Each figure: "
        f"{args.calls} sequential `BeliefEngine.recall(user, query, max_tokens=800)` calls "
        f"after {args.warmup} warm-up calls, query embeddings precomputed.",
        "",
        "| beliefs of the user recalled | recall p50 / p95 ms |",
        "|---:|---:|",
        *(f"| {n:,} | {_ms(t)} |" for n, t in per_user),
        "",
        f"Beliefs per user ({sum(n for _, n in plan):,} beliefs in the database, 1,000 "
        f"users of {PER_USER}): {_crossing(per_user, 'beliefs per user')}.",
        "",
        f"| beliefs in the database ({PER_USER} per user) | recall p50 / p95 ms |",
        "|---:|---:|",
        *(f"| {n:,} | {_ms(t)} |" for n, t in by_total),
        "",
        f"Total beliefs: {_crossing(by_total, 'beliefs in all')}.",
    ]
    return "\n".join(lines)


def _cluster_facts(url: str) -> tuple[str, int]:
    with psycopg.connect(url) as conn:
        version = conn.execute("SELECT citus_version()").fetchone()
        workers = conn.execute(
            "SELECT count(*) FROM pg_dist_node WHERE groupid > 0 AND isactive "
            "AND noderole = 'primary'"
        ).fetchone()
    return str(version[0] if version else "?").split(" on ")[0], int(workers[0] if workers else 0)


async def _cluster(args: argparse.Namespace, server: Server) -> str:
    sys.path.insert(0, str(ROOT))
    from tests.citus.cluster import create_database, database_url, drop_database

    emb = make_embedder("offline", args.dim)
    plan = [(u, PER_USER) for u in ordinary_users(args.users)] + [("large-user", args.large)]
    recall: dict[str, dict[str, Timing]] = {}
    writes: dict[str, list[Drain]] = {}
    version, workers = _cluster_facts(args.citus)
    load_before = _load()
    name = create_database(args.citus, shards=args.shards)
    try:
        facts = machine(server)
        targets = {
            "single server": server.database("scale_single"),
            f"cluster (coordinator + {workers} workers)": database_url(args.citus, name),
        }
        for target, url in targets.items():
            started = time.perf_counter()
            beliefs = load(url, emb, plan)
            print(f"  {target}: {beliefs:,} beliefs in {time.perf_counter() - started:.0f} s")
            recall[target] = {
                "ordinary": await time_recall(
                    url, emb, ordinary_users(args.users), calls=args.calls, warmup=args.warmup
                ),
                "large": await time_recall(
                    url, emb, ["large-user"], calls=args.calls, warmup=args.warmup
                ),
            }
            print(f"  {target}: recall {recall[target]}", flush=True)
            writes[target] = []
            for processes in (1, 4):
                d = await drain(
                    url, prefix=f"w{processes}", users=args.write_users, turns=args.turns,
                    processes=processes,
                )  # fmt: skip
                writes[target].append(d)
                print(f"  {target}: {processes} worker processes: {d}", flush=True)
    finally:
        if not args.keep:
            drop_database(args.citus, name)
    beliefs = sum(n for _, n in plan)
    lines = [
        "## Measured on the local cluster",
        "",
        f"Command: `{args.command}`",
        "",
        f"Nodes: one coordinator and {workers} workers on this machine ({version}, PostgreSQL "
        f"and pgvector as below), a fresh database distributed by the migrations with "
        f"{args.shards} shards per table; against one embedded server. Machine: {facts}; "
        f"{args.dim}-d offline-embedder vectors; load average {load_before} before the run, "
        f"{_load()} after it. Data, the same on both: {args.users:,} users "
        f"of {PER_USER} beliefs and one user of {args.large:,}, {beliefs:,} beliefs in all, "
        "loaded by COPY (through the coordinator on the cluster).",
        "",
        SHARED_BOX,
        "",
        "| recall, p50 / p95 ms | single server | cluster, through the coordinator "
        "| cluster / single, p50 |",
        "|---|---:|---:|---:|",
    ]
    single, cluster = list(recall)
    kinds = (("ordinary", f"a user of {PER_USER}"), ("large", f"the user of {args.large:,}"))
    for kind, label in kinds:
        a, b = recall[single][kind], recall[cluster][kind]
        lines.append(f"| {label} | {_ms(a)} | {_ms(b)} | {b.p50 / a.p50:.1f}x |")
    lines += [
        "",
        f"Recall: {args.calls} sequential `BeliefEngine.recall(user, query, max_tokens=800)` "
        f"calls after {args.warmup} warm-up calls, query embeddings precomputed, users drawn "
        "at random; one process, one connection at a time.",
        "",
        "| writes: jobs applied / s (seconds) | single server | cluster, through the coordinator |",
        "|---|---:|---:|",
    ]
    for i, processes in enumerate((1, 4)):
        one, many = writes[single][i], writes[cluster][i]
        lines.append(
            f"| {processes} worker process{'es' if processes > 1 else ''} "
            f"| {one.jobs_per_s:,.1f} ({one.seconds:.1f}) "
            f"| {many.jobs_per_s:,.1f} ({many.seconds:.1f}) |"
        )
    d = writes[cluster][0]
    lines += [
        "",
        f"Writes: {d.jobs:,} turns ({args.write_users} users x {args.turns}) queued as jobs "
        "first (not timed), then drained by that many processes, each one `MemoryWorker` "
        "(claim under a lease, extract, apply under the user's advisory lock, job done in "
        "the same transaction) with the rule extractor (no LLM call: the figure is the "
        "queue, the engine and the database); from the release of the processes to the exit "
        f"of the last. Each turn made one belief ({d.beliefs:,} on the cluster's 1-process run).",
    ]
    return "\n".join(lines)


def tidy(doc: str) -> str:
    """One blank line before every section heading (a replaced section ends without one)."""
    return re.sub(r"([^\n])\n## ", r"\1\n\n## ", doc)


def _command(argv: list[str]) -> str:
    """The command line as run, the coordinator's URL (which may hold a password) elided."""
    shown = ["python -m bench.scale_out"]
    for i, arg in enumerate(argv):
        if arg.startswith("--citus="):
            shown.append("--citus <coordinator URL>")
        elif i > 0 and argv[i - 1] == "--citus":
            shown.append("<coordinator URL>")
        else:
            shown.append(arg)
    if "--citus" not in " ".join(argv) and os.environ.get("MEM01_CITUS_URL"):
        shown.insert(0, "MEM01_CITUS_URL=<coordinator URL>")
    return " ".join(shown)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.scale_out", description=__doc__)
    parser.add_argument("--only", choices=("when", "cluster"), default=None)
    parser.add_argument("--citus", default=os.environ.get("MEM01_CITUS_URL", ""))
    parser.add_argument("--sizes", default="100,1000,2000,5000,10000,20000")
    parser.add_argument("--totals", default="10000,100000,1000000")
    parser.add_argument("--users", type=int, default=1000)
    parser.add_argument("--large", type=int, default=5000)
    parser.add_argument("--write-users", type=int, default=200)
    parser.add_argument("--turns", type=int, default=4)
    parser.add_argument("--shards", type=int, default=32)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=50)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--keep", action="store_true", help="keep the cluster's database")
    parser.add_argument("--doc", type=Path, default=Path("docs/scale-out.md"))
    parser.add_argument("--no-doc", action="store_true")
    args = parser.parse_args(argv)
    args.command = _command(list(argv if argv is not None else sys.argv[1:]))
    os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")
    if args.only in (None, "cluster") and not args.citus:
        raise SystemExit("the cluster part needs --citus URL or MEM01_CITUS_URL")
    sections: list[str] = []
    with embedded_server() as server:  # one for the whole run, stopped at exit
        if args.only in (None, "when"):
            print("== when to move", flush=True)
            sections.append(asyncio.run(_when(args, server)))
        if args.only in (None, "cluster"):
            print("== the local cluster", flush=True)
            sections.append(asyncio.run(_cluster(args, server)))
    for text in sections:
        print(text)
    if not args.no_doc:
        doc = args.doc.read_text() if args.doc.exists() else "# Scale-out\n"
        for text in sections:
            doc = replace_section(doc, text.splitlines()[0].removeprefix("## "), text)
        args.doc.write_text(tidy(doc))


if __name__ == "__main__":
    main()
