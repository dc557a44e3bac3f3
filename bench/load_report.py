"""The report of ``python -m bench load``: its tables, note and chart data, generated from
a :class:`~bench.load.LoadResult`."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from mem01session.queue import WorkerPolicy

from .busy import HOG_LIMIT_SECONDS, HOGS
from .common import nproc, percentiles
from .load import DRAIN_LIMIT_SECONDS, SAMPLE_SECONDS, THINK, LoadResult, Phase, Runs
from .load_floor import FREE_RECALL_SECONDS
from .load_processes import WORKER_NICE


def _where(loaded: bool) -> str:
    return f"{HOGS} busy processes" if loaded else "idle"


def _worker(p: Phase) -> str:
    if p.recall_free:
        return "own process; every recall computing nothing"
    if p.separate:
        return "own process"
    return "in the runs' process" + ("" if p.gives_way else ", never giving way")


def _machine(p: Phase) -> str:
    return _where(p.loaded) + (", start-up frozen" if p.frozen else "")


def _name(p: Phase) -> str:
    return f"{_machine(p)}, worker {_worker(p)}"


def _ms(values: Sequence[float], digits: int = 1) -> str:
    return " / ".join(f"{v:.{digits}f}" for v in values)


def _added(p: Phase) -> tuple[float, ...]:
    """Mem01Session minus bare, per percentile (p50, p95, p99)."""
    bare, mem = percentiles(p.bare.ms), percentiles(p.mem.ms)
    return tuple(m - b for m, b in zip(mem, bare, strict=True))


def spread(r: LoadResult) -> str:
    """Added p95 of each round, per machine state and worker (empty for one round)."""
    if r.rounds < 2:
        return ""
    rows = [
        f"| machine | worker | added p95 ms, rounds 1-{r.rounds} | worst |",
        "|---|---|---|---:|",
    ]
    for first in (p for p in r.phases if p.round == 1):
        same = [
            p
            for p in r.phases
            if (p.loaded, p.frozen, p.separate, p.gives_way, p.recall_free)
            == (first.loaded, first.frozen, first.separate, first.gives_way, first.recall_free)
        ]
        p95s = [_added(p)[1] for p in sorted(same, key=lambda p: p.round)]
        rows.append(f"| {_machine(first)} | {_worker(first)} | {_ms(p95s)} | **{max(p95s):.1f}** |")
    return "\n".join(rows) + "\n\n"


def _round(r: LoadResult, p: Phase) -> str:
    return f"{p.round} | " if r.rounds > 1 else ""


def table(r: LoadResult) -> str:
    first = "| round " if r.rounds > 1 else ""
    rule = "|---:" if r.rounds > 1 else ""
    rows = [
        f"{first}| machine | worker | runs | bare p50 / p95 / p99 ms "
        "| Mem01Session p50 / p95 / p99 ms "
        "| added p50 / p95 / p99 ms | runs that waited | longest wait ms "
        "| waits of a full `recall_wait` | blocks quoting queued turns | stale blocks "
        "| runs without memory "
        "| turns / s | CPU ms / turn: bare; Mem01Session + embedding process (+ worker process) "
        "+ server | full GCs (longest ms): bare, Mem01Session |",
        f"{rule}|---|---|---:|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|---|",
    ]
    for p in r.phases:
        bare, mem, added = percentiles(p.bare.ms), percentiles(p.mem.ms), _added(p)
        waits = [w for w in p.mem.waited_ms if w > 0]
        full = sum(1 for w in waits if w >= p.recall_wait * 1000 * 0.95)
        apart = "" if p.worker_cpu_s is None else f" (+ {_cpu_ms(p.mem, p.worker_cpu_s):.1f})"
        rows.append(
            f"| {_round(r, p)}{_machine(p)} | {_worker(p)} | {len(p.mem.ms)} | {_ms(bare)} "
            f"| {_ms(mem)} "
            f"| **{_ms(added)}** | {len(waits)} | {max(waits, default=0.0):.0f} | {full} "
            f"| {p.mem.quoting} | {p.mem.stale} | {p.mem.without_memory} | {_rate(p.mem):.1f} "
            f"| {_cpu_ms(p.bare):.1f}; {_cpu_ms(p.mem):.1f} + "
            f"{_cpu_ms(p.mem, p.helpers_cpu_s):.1f}{apart} + {_server_ms(p)} "
            f"| {_gcs(p.bare)}, {_gcs(p.mem)} |"
        )
    rows += [
        "",
        f"{first}| machine | worker | jobs | done when the turns ended | backlog then "
        "| largest backlog | drained after s | jobs / s | worker gave way s | lost | duplicated "
        "| failed |",
        f"{rule}|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for p in r.phases:
        drained = f"{p.drained_s:.1f}" if p.drained_s is not None else "not drained"
        rows.append(
            f"| {_round(r, p)}{_machine(p)} | {_worker(p)} | {p.jobs} "
            f"| {_count(p.done_at_turns_end)} "
            f"| {_count(p.backlog_at_turns_end)} | {max((n for _, n in p.backlog), default=0)} "
            f"| {drained} | {p.jobs_per_s:.1f} | {_gave_way(p)} | {p.lost} | {p.duplicated} "
            f"| {p.failed_jobs} |"
        )
    if r.scale is not None:
        rows += [
            "",
            "| beliefs of the user | machine | recall p50 / p95 / p99 ms | p95 against idle "
            "| query embedding p50 / p95 ms | near-duplicate step p50 / p95 ms |",
            "|---:|---|---|---:|---|---|",
        ]
        for n in r.scale.scales:
            idle_p95 = percentiles(r.scale.times[(n, False)].recall)[1]
            for loaded in (False, True):
                t = r.scale.times[(n, loaded)]
                recall = percentiles(t.recall)
                rows.append(
                    f"| {n:,} | {_where(loaded)} | {_ms(recall)} | {recall[1] / idle_p95:.2f}x "
                    f"| {_ms(percentiles(t.embed)[:2])} | {_ms(percentiles(t.near)[:2], 2)} |"
                )
    return spread(r) + "\n".join(rows)


def _gave_way(p: Phase) -> str:
    return "-" if p.gave_way_s is None else f"{p.gave_way_s:.1f}"


def _gcs(runs: Runs) -> str:
    return f"{len(runs.full_gcs)} ({max(runs.full_gcs, default=0.0):.0f})"


def _rate(runs: Runs) -> float:
    """Turns answered per second over the side's runs."""
    return len(runs.ms) / runs.wall_s if runs.wall_s else 0.0


def _cpu_ms(runs: Runs, cpu_s: float | None = None) -> float:
    """This process's CPU time per turn (ms), or ``cpu_s``'s over the same turns."""
    spent = runs.cpu_s if cpu_s is None else cpu_s
    return spent * 1000.0 / len(runs.ms) if runs.ms else 0.0


def _server_ms(p: Phase) -> str:
    return "?" if p.server_cpu_s is None else f"{_cpu_ms(p.mem, p.server_cpu_s):.1f}"


def whole_ms(p: Phase) -> float | None:
    """CPU time per turn with memory over every process the turns kept busy: the runs',
    its embedding process, the worker process (if apart) and the PostgreSQL server; None
    when the server's could not be read (it runs elsewhere)."""
    if p.server_cpu_s is None:
        return None
    spent = p.mem.cpu_s + p.helpers_cpu_s + (p.worker_cpu_s or 0.0) + p.server_cpu_s
    return _cpu_ms(p.mem, spent)


def capacity(r: LoadResult) -> str:
    """What the CPU figures say of this machine's capacity (generated from them)."""
    idle = next((p for p in r.phases if not p.loaded and not p.separate), None)
    if idle is None or not idle.mem.ms:
        return ""
    per_turn = _cpu_ms(idle.mem)
    memory = per_turn - _cpu_ms(idle.bare)
    return (
        f"Capacity: idle, one turn cost this process {per_turn:.1f} ms of CPU with memory "
        f"({memory:.1f} ms more than bare: the recall, the enqueue and the turn's extraction "
        "in the background worker"
        + ("; the model's time is the embedding process's" if r.embedding_process else "")
        + "), so one process can take at most "
        f"{1000.0 / per_turn:.0f} turns / s if it had a whole core to itself (Python runs one "
        f"thread at a time); the scenario offered about {_rate(idle.bare):.0f} turns / s "
        "(bare). Past that the runs queue for the CPU, and the added latency is that queue, "
        "not a wait for memory (see 'runs that waited')." + _machine_capacity(idle)
    )


def _machine_capacity(idle: Phase) -> str:
    """The same for the whole machine: every process a turn kept busy, on every core."""
    whole, cores = whole_ms(idle), len(os.sched_getaffinity(0))  # the cores nproc counts
    if whole is None or whole <= 0:
        return ""
    return (
        f" Over every process a turn kept busy (this one, its embedding process and the "
        f"PostgreSQL server) one turn with memory cost {whole:.1f} ms of CPU against "
        f"{_cpu_ms(idle.bare):.1f} bare, so this {cores}-core machine could answer at most "
        f"{cores * 1000.0 / whole:.0f} turns / s with memory if nothing else ran, a share "
        "the busy processes cut into."
    )


def _model_where(r: LoadResult) -> str:
    if r.embedding_process:
        return (
            "which runs the model in a process of its own (the default; "
            "`MEM01_EMBEDDING_PROCESS=0` runs it in the runs' process)"
        )
    return "which runs the model in the runs' process (`MEM01_EMBEDDING_PROCESS=0`)"


def _count(value: int | None) -> str:
    return "?" if value is None else str(value)


def note(r: LoadResult) -> str:
    scale = r.scale
    recall_wait = r.phases[0].recall_wait if r.phases else 0.0
    at_scale = (
        f"{scale.calls} timed recalls (800 tokens) per scale and machine state, after "
        f"{scale.warmup} untimed, the scales alternating; every query a different text, so "
        "that no vector kept of a recent text can serve it; the query's embedding and the "
        "near-duplicate step are timed inside those same recalls. "
        if scale is not None
        else ""
    )
    errors = sorted({e for p in r.phases for e in p.mem.errors})
    return (
        f"{r.sessions} conversations over {r.users} users (up to "
        f"{-(-r.sessions // r.users)} at once per user), {r.turns} turns each, concurrent on "
        f"one event loop; the user replies {THINK[0]:g}-{THINK[1]:g} s after each answer "
        "(seeded). The same texts and think times through bare `SQLiteSession` "
        "conversations first, then through Mem01Session ones (fresh transcripts, a fresh "
        "database per machine state); added = Mem01Session minus bare, per percentile. "
        + (
            f"Every machine state ran {r.rounds} times, the states taking turns (idle, busy, "
            "busy with the start-up frozen, then again); the first table is each round's "
            "added p95 and the worst of them, the backlog chart the first round's. "
            if r.rounds > 1
            else ""
        )
        + "Rule extractor; every recall embeds its query with the library's embedder (in the "
        f"figures), {_model_where(r)}; the vectors it keeps of recent texts are dropped "
        "before each row's runs (each row says the same texts, and a user says new ones). "
        "Worker 'in the runs' process': the memory's "
        "background worker, as by default, which gives way to the runs while they recall "
        "or enqueue, until a turn was queued "
        f"{WorkerPolicy().yield_to_runs:g} s ago (`WorkerPolicy.yield_to_runs`); 'never "
        "giving way': the same with `yield_to_runs=0`, beside the busy processes only; "
        "'own process': `Memory(run_worker=False)` in "
        "the runs' process and one "
        f"`nice -n {WORKER_NICE} mem01session worker` process beside it, as docs/deployment.md "
        "tells a machine shared with the runs (same database, embedding model and "
        "extractor), whose CPU time over the same span (its embedding process's included) "
        "is the '(+ ...)' figure. "
        "'Every recall computing nothing' (beside the busy processes only): the same with a "
        "worker process, each user's first recall read for real and every later one "
        f"answered with that block after {FREE_RECALL_SECONDS * 1000:.0f} ms, computing "
        "nothing on any process (`bench/load_floor.py`): what is left of the added latency "
        "is what memory does besides recalling (the enqueue, the session's work) and what "
        "the busy processes cost the runs. "
        f"Busy: {HOGS} processes spinning in a "
        f"loop on this {nproc()}-core machine, started by the benchmark before the bare runs "
        f"and ended after the Mem01Session runs (each ends by itself after "
        f"{HOG_LIMIT_SECONDS:.0f} s whatever happens). 'Runs that waited': recalls that "
        "waited for turns of the user's other conversations (`RecallResult.waited_ms`; a "
        "run waits for none: their words close its block instead); 'waits of a full "
        f"`recall_wait`': at least 95% of it ({recall_wait:g} s); blocks quoting queued "
        "turns: blocks that close with the words of the user's turns still queued elsewhere "
        "(`RecallResult.pending_quoted`); stale blocks: turns of the user still queued that "
        "the block neither reflects nor quotes, counted in its header. Backlog: jobs "
        f"pending or running, sampled every {SAMPLE_SECONDS:g} s from the first turn until "
        f"none is left (at most {DRAIN_LIMIT_SECONDS:.0f} s after the last turn); jobs / s "
        "over that span. Worker gave way: seconds the worker in the runs' process waited "
        "for the runs, summed over its jobs ('-': a worker process does not see the runs). "
        "Lost and duplicated: each turn's "
        "words must be stored as exactly one episode, and no more jobs done than turns. "
        "Turns / s: answered per second while "
        "the conversations ran. CPU: the runs' process's CPU time, all threads, over "
        "each side's runs (with memory: until the backlog was drained), per turn, then its "
        "embedding process's over the same span (the model's time on the queries and on the "
        "worker's texts), then the worker process's (apart), then the PostgreSQL server's (its "
        "processes' CPU time over the same span: backends, checkpointer, WAL writer, "
        "autovacuum). Full GCs: the runs' "
        "process's full garbage collections while the conversations ran, and the longest "
        "(each stops every conversation of the process while it runs). 'Start-up frozen': "
        "the same busy machine, `gc.collect()` then `gc.freeze()` called before the "
        "state's runs (both sides alike) and again once each Mem01Session side's memory "
        "is open and ready, where docs/configuration.md has a server call it when its start-up is "
        "done: what the process held then is left out of later collections "
        "(`gc.unfreeze()` after). "
        + capacity(r)
        + " Recall at scale: one user's synthetic beliefs COPY'd as in the latency "
        "benchmark; " + at_scale + "Memory "
        f"errors: {'; '.join(errors) or 'none'}. Took {r.seconds:.0f} s. CPU reference of "
        f"this run: {r.cpu_ms:.0f} ms at its start, {r.cpu_ms_end:.0f} ms at its end (a fixed "
        "Python loop, best of 3, idle; this shared VM's speed drifts between runs and within "
        "one, and the figures with it: each row's bare CPU per turn, the same work every "
        "time, shows how fast the machine ran for that row)."
        "\n\n![backlog over time](img/bench-load.png)"
    )


def chart_data(r: LoadResult) -> dict[str, Any]:
    return {
        "title": f"Extraction backlog under {r.sessions} concurrent conversations",
        "phases": {
            _name(p): {"backlog": p.backlog, "turns_end_s": p.turns_end_s}
            for p in r.phases
            if p.round == 1
        },
    }
