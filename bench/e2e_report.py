"""Tables, notes and chart data of the end-to-end benchmark (:mod:`bench.e2e`)."""

from __future__ import annotations

import json
import statistics

from mem01session.engine.scoring import TEXT_WEIGHT
from mem01session.extraction.openai_extractor import OP_SCHEMA, PROMPT_VERSION, load_prompt
from mem01session.queue import WorkerPolicy
from mem01session.tokens import default_token_counter

from .e2e import (
    BUDGETS,
    MEM0,
    MEM0_LLM,
    PIPELINE_ROWS,
    RAW,
    REPLAY_MODEL,
    BackfillParity,
    E2EResult,
)
from .locomo import NO_REPLY
from .quality import CANDIDATES
from .replay import MEM0 as MEM0_SYSTEM
from .replay import OURS
from .replay_server import ModelUsage

STATUSES = ("active", "superseded", "merged", "invalidated")

CATEGORIES = (1, 2, 3, 4)


def _per_user(counts: dict[str, int], users: int) -> str:
    """Mean per user (every user counted, a user with none as 0)."""
    if not counts:
        return "—"
    return f"{sum(counts.values()) / max(users, len(counts)):.1f}"


def _mark(r: E2EResult, name: str, budget: int, category: int | None = None) -> str:
    return "" if r.agreed(name, budget, category) else " †"


def _beliefs(r: E2EResult, name: str) -> str:
    """Beliefs per user: active (and, with a model, superseded / merged); mem0's memories."""
    row, users = r.rows[name], 2 * r.dialogues
    if name in (MEM0, MEM0_LLM):
        return f"{_per_user(row.beliefs, users)} memories"
    if not r.usage or not row.statuses:
        return _per_user(row.beliefs, users)
    return " / ".join(_per_user({s: row.statuses.get(s, 0)}, users) for s in STATUSES[:3])


def table(r: E2EResult) -> str:
    users = 2 * r.dialogues
    statuses = " (active / superseded / merged)" if r.usage else ""
    lines = [
        "| row | "
        + " | ".join(f"evidence in block @{b}" for b in BUDGETS)
        + " | "
        + " | ".join(f"block tokens @{b}" for b in BUDGETS)
        + f" | beliefs / user{statuses} | episodes / user | ingest s / turn |",
        "|---|" + "---:|" * (2 * len(BUDGETS) + 3),
    ]
    for name, row in r.rows.items():
        hits = " | ".join(f"{row.summaries[b].in_block:.3f}{_mark(r, name, b)}" for b in BUDGETS)
        tokens = " | ".join(f"{row.summaries[b].mean_tokens:.0f}" for b in BUDGETS)
        lines.append(
            f"| {name} | {hits} | {tokens} | {_beliefs(r, name)} "
            f"| {_per_user(row.episodes, users)} | {row.ingest_s_per_turn:.4f} |"
        )
    return "\n".join(lines)


def cost(r: E2EResult) -> str:
    """What each system asked of the model per turn (one exchange: the user's message and
    the reply), counted by the benchmark's server with the one tokenizer."""
    lines = [
        "| system | model calls / turn | prompt tokens / turn | completion tokens / turn "
        "| model tokens / turn | requests it could not place |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for system, label in ((OURS, "mem01session"), (MEM0_SYSTEM, MEM0_LLM)):
        u = r.usage.get(system)
        if u is None:
            continue
        turns = max(r.turns, 1)
        lines.append(
            f"| {label} | {u.calls / turns:.2f} | {u.prompt_tokens / turns:,.0f} "
            f"| {u.completion_tokens / turns:,.1f} "
            f"| {(u.prompt_tokens + u.completion_tokens) / turns:,.0f} | {u.unplaced} |"
        )
    return "\n".join(lines)


def lifecycle(r: E2EResult) -> str:
    """What the write path did: this pipeline's ledger ops, mem0's history events."""
    kinds = sorted({k for ops in r.lifecycle.values() for k in ops})
    lines = ["| system | " + " | ".join(kinds) + " |", "|---|" + "---:|" * len(kinds)]
    for name, ops in r.lifecycle.items():
        lines.append(f"| {name} | " + " | ".join(f"{ops.get(k, 0):,}" for k in kinds) + " |")
    return "\n".join(lines)


def quotes(r: E2EResult) -> str:
    """How many of the blocks' quotes come from a turn LoCoMo observed no fact in."""
    lines = [
        "| row | budget | quotes in the blocks | from a turn with no fact | share |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, row in r.rows.items():
        for b, (n, empty) in sorted(row.quotes.items()):
            if n:
                lines.append(f"| {name} | {b} | {n:,} | {empty:,} | {empty / n:.3f} |")
    return "\n".join(lines)


def text_weights(r: E2EResult) -> str:
    """The mem01session row again with the full-text list weighed otherwise; the
    library's weight in bold."""
    lines = [
        "| text weight | " + " | ".join(f"evidence in block @{b}" for b in BUDGETS) + " |",
        "|---:|" + "---:|" * len(BUDGETS),
    ]
    for weight, hits in r.text_weights.items():
        name = f"**{weight:g} (the library's)**" if weight == TEXT_WEIGHT else f"{weight:g}"
        lines.append(f"| {name} | " + " | ".join(f"{hits[b]:.3f}" for b in BUDGETS) + " |")
    return "\n".join(lines)


def categories(r: E2EResult) -> str:
    lines = [
        "| row | budget | " + " | ".join(f"category {c}" for c in CATEGORIES) + " | overall |",
        "|---|---:|" + "---:|" * (len(CATEGORIES) + 1),
    ]
    for name, row in r.rows.items():
        for b in BUDGETS:
            s = row.summaries[b]
            cells = " | ".join(
                f"{s.by_category.get(c, float('nan')):.3f}{_mark(r, name, b, c)}"
                for c in CATEGORIES
            )
            lines.append(f"| {name} | {b} | {cells} | {s.in_block:.3f}{_mark(r, name, b)} |")
    counts = r.category_counts
    lines.append("")
    lines.append(
        "Questions per category: " + ", ".join(f"{c}: {counts.get(c, 0)}" for c in CATEGORIES) + "."
    )
    return "\n".join(lines)


def note(r: E2EResult) -> str:
    first, later = r.runs.get("first"), r.runs.get("later")
    pipeline = next(iter(PIPELINE_ROWS))
    kinds = "its rows recall all records (the default), beliefs only and episodes only"
    parts = [
        f"{r.dialogues} conversation(s), {r.turns} turns, {r.questions} questions of "
        f"categories 1-4 with evidence (their evidence names a turn of the dialogue for "
        f"{r.ceiling:.3f} of them), the question text stripped of surrounding whitespace for "
        "every row. Each speaker is a user; each LoCoMo session is one chat per speaker, "
        "that speaker's turns the user messages and the other speaker's turns the replies "
        "(given verbatim by the benchmark's model; a turn nobody answered before the "
        f'speaker spoke again or the session ended gets "{NO_REPLY}"; an image turn is '
        '"text [image: caption]"). '
        f"**{pipeline}**: every turn through `Runner.run(agent, text, session=Mem01Session("
        "chat_id, user_id, memory=memory), run_config=session.run_config())`, one shared "
        f"`Memory` {_configuration(r)}, each chat flushed at its end; {kinds}. The clock is each "
        "session's date plus the turn's index in seconds, so each stored item's observed "
        "time names its turn; a recalled belief counts through its sources "
        "(`engine.history`), mapped to the user turn (never the reply) they came from. "
        f"**{RAW}**: every turn ADDed by `engine.apply` as a belief of its speaker's user, "
        'as "[8 May 2023] Caroline: text", observed at its instant; recalled with the same '
        f"default block. **{MEM0}**: the same texts, one `Memory.add(message, infer=False)` "
        "each for its speaker's user (dia_id in the metadata); recall = `Memory.search` "
        "with the user filter, its results packed as `- text` lines under a one-line "
        "header." + _mem0_llm(r),
        "For each question both speakers' users recall at the budget each; the question is "
        "a hit when either block holds an item from a turn in its evidence (a question "
        "counts once). Block tokens: the two blocks together, counted with the one "
        "tokenizer named above. Ingest s / turn: the Runner pipeline's wall time including "
        "the flushes; raw turns, `engine.apply` calls; mem0, its own `add` calls. Vectors "
        "of the turns, the stored texts and the questions were computed before any timing "
        "(one embedder for every row); the pipeline's timing includes embedding the "
        "beliefs its extractor wrote.",
    ]
    same = [
        name
        for name in r.rows
        if all(r.agreed(name, b, c) for b in BUDGETS for c in (None, *CATEGORIES))
    ]
    parts[1] += (
        f" The whole evaluation ran {len(r.repeats)} time(s) on fresh databases; figures "
        "marked † differed between runs (the first run's shown); every evidence figure "
        f"agreed for: {', '.join(same) or 'none'}. Timings and the checks below are the "
        "first run's."
    )
    mem0 = r.rows.get(MEM0)
    if mem0 is not None and mem0.returned:
        parts[0] += (
            f" mem0 was asked for {CANDIDATES} results per search and returned "
            f"{statistics.fmean(mem0.returned):.1f} on average (see the caveat on "
            "approximate search)."
        )
    checks = []
    if first and later:
        checks.append(
            f"runs after the first session: {later.runs}, of which {later.recalled} recalled "
            f"a non-empty block and {later.carried} had exactly that block in their model "
            f"input (first session: {first.runs} runs, {first.recalled} and "
            f"{first.carried})"
        )
    checks.append(f"pipeline jobs: {json.dumps(r.jobs)}")
    checks.append(f"flushes that reported a failure: {len(r.flush_failures)}")
    checks.append(f"belief sources naming no turn: {r.unmapped_sources}")
    checks.append(f"failures: {json.dumps(r.failures) if r.failures else 'none'}")
    parts.append("Checks: " + "; ".join(checks) + f". Took {r.seconds:.0f} s.")
    return "\n\n".join(parts)


def _configuration(r: E2EResult) -> str:
    if r.extractor == "rules":
        return "in its default offline configuration (the rule extractor in the background worker)"
    return (
        "with the model extractor (`OpenAIExtractor`, its strict JSON schema, in the "
        f"background worker) against the benchmark's chat server ({_server(r)})"
    )


def _server(r: E2EResult) -> str:
    if r.extractor == "openai":
        return "which passed every request on to the model `OPENAI_BASE_URL` names"
    return (
        f"`bench/replay_server.py`, model `{REPLAY_MODEL}`: it answers a request about a "
        "turn, found from the user's words it carries, with LoCoMo's observations about that "
        f"turn's speaker drawn from that turn ({r.observations} of them; "
        f"{r.unplaced_observations} more are about one speaker but drawn from the other's "
        "turn, and never answered), as this library's ops (ADD, the fact as the statement; "
        "a fact restating an active belief among the request's candidates ADDed with that "
        "belief's text, which the engine records as a confirmation) or as mem0's "
        '`{"memory": [...]}` (a fact restating one of its existing memories left out, as its '
        f"prompt asks); {r.unobserved_questions} of the {r.questions} questions name as their "
        "evidence only turns no observation was drawn from, so no belief the replay writes "
        "points at their evidence: only the quotes can hold it)"
    )


def _mem0_llm(r: E2EResult) -> str:
    if MEM0_LLM not in r.rows:
        return ""
    return (
        f" **{MEM0_LLM}**: each exchange (the user's turn and the reply) added after it "
        "happened with `Memory.add(messages, user_id=...)` (`infer=True`, the user's turn "
        "dia_id in the metadata): its real pipeline (its last messages and nearest memories "
        "read, one extraction call to the same chat server, its hash dedup, its vector "
        "store; spaCy, which its entity linking and lemmatizing use when installed, is not), "
        "recalled as the raw row is."
    )


def chart_data(r: E2EResult) -> dict[str, dict[str, float]]:
    """Evidence in the block, per row and budget (for the chart)."""
    return {
        name: {str(b): row.summaries[b].in_block for b in BUDGETS} for name, row in r.rows.items()
    }


def fixed_prompt_tokens() -> int:
    """Tokens of what every extraction request of this library carries: its instructions
    and the JSON schema of its ops."""
    count = default_token_counter().count
    return count(load_prompt()) + count(json.dumps(OP_SCHEMA))


def section(r: E2EResult) -> str:
    """The report's section body for one run of the benchmark."""
    out = f"{table(r)}\n\n{note(r)}\n\n"
    if r.usage:
        out += (
            "What each system asked of the model per turn (one exchange: the user's message "
            "and the reply; counted by the benchmark's server with the one tokenizer named "
            "above: every message's text, and the JSON schema a request sends):\n\n"
            f"{cost(r)}\n\nOf this library's prompt, {fixed_prompt_tokens():,} tokens are the "
            "same in every call (its instructions, `extraction/prompts/"
            f"{PROMPT_VERSION}.md`, and the JSON schema of its ops); the rest is the turn, the "
            "end of the message before it, and the user's nearest beliefs (at most "
            f"{WorkerPolicy().candidates}, and every keyed one). A turn of small talk that "
            "answers no question is not sent at all (`WorkerPolicy.skip_small_talk`).\n\n"
            "What the write path did (this pipeline's ledger; mem0's history):"
            f"\n\n{lifecycle(r)}\n\n"
        )
    flagged, with_fact = r.small_talk
    out += (
        "Quotes in the blocks that come from a turn LoCoMo's observations name no fact in "
        f"(a greeting, thanks, a question back):\n\n{quotes(r)}\n\nThe library takes "
        f"{flagged} of the dialogue's {r.turns} turns for small talk "
        "(`engine/small_talk.py`: ranked down in recall, not sent to a model extractor), "
        f"{with_fact} of which carry a fact LoCoMo's observations name.\n\nEvidence in the "
        f"blocks per LoCoMo category:\n\n{categories(r)}"
    )
    if r.text_weights:
        out += (
            "\n\nThe full-text list's weight in the fusion: a text match's rank term, scaled "
            "by the share of the question's word weight it covers, times this (the first run's "
            "memory recalled again with each; every other figure here uses the library's):"
            f"\n\n{text_weights(r)}"
        )
    if r.extractor == "rules":
        out += "\n\n![evidence in the block versus budget](img/bench-e2e.png)"
    return out


def readme_cost(r: E2EResult, report: str = "docs/benchmarks.md") -> str:
    """The sentence on what the model path costs per turn, against mem0's, for a page
    that links to the report as ``report``."""
    ours, theirs = r.usage.get(OURS), r.usage.get(MEM0_SYSTEM)
    if ours is None or theirs is None:
        return ""
    turns = max(r.turns, 1)

    def cost(u: ModelUsage) -> str:
        return (
            f"{u.calls / turns:.2f} model calls and "
            f"{(u.prompt_tokens + u.completion_tokens) / turns:,.0f} tokens per turn"
        )

    return (
        f"With a model, extraction cost {cost(ours)} on LoCoMo's dialogue, against "
        f"{cost(theirs)} for mem0's own LLM pipeline on the same turns (same server and "
        "tokenizer; `python -m bench e2e --extractor replay`, [details]"
        f"({report}#end-to-end-with-a-models-beliefs-locomos-observations-replayed))."
    )


def backfill_table(p: BackfillParity) -> str:
    """The default row fed live and by backfill: evidence in the block per budget."""
    head = "| fed | " + " | ".join(f"evidence in block @{b}" for b in BUDGETS) + " | s per turn |"
    rows = [head, "|---|" + "---:|" * (len(BUDGETS) + 1)]
    names = {"live": "as it happened (`Runner.run`)", "backfill": "backfilled from `SQLiteSession`"}
    for way, hits in p.in_block.items():
        cells = " | ".join(f"{hits[b]:.3f}" for b in BUDGETS)
        rows.append(f"| {names[way]} | {cells} | {p.seconds_per_turn[way]:.3f} |")
    gaps = ", ".join(
        f"{p.in_block['backfill'][b] - p.in_block['live'][b]:+.3f} at {b}" for b in BUDGETS
    )
    return (
        "\n".join(rows)
        + f"\n\n{p.dialogues} conversation(s), {p.turns} turns, {p.questions} questions with "
        "evidence; the default recall (beliefs and episodes), each speaker's user at each "
        "budget, scored as in the end-to-end section. Live: every turn through `Runner.run` on "
        "`Mem01Session`, each chat flushed at its end. Backfilled: the same chats first kept by "
        "the SDK's `SQLiteSession` (one file; each item dated when it was said, to the "
        "second), then `backfill(memory, file, users)` (what `mem01session backfill` runs); "
        f"both with the rule extractor, on fresh databases. Backfilled minus live: {gaps}. "
        "Seconds per turn: the ingest's wall time, extraction included."
    )
