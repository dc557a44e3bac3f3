"""Tables, notes and chart data of the end-to-end benchmark (:mod:`bench.e2e`)."""

from __future__ import annotations

import json
import statistics

from mem01session.engine.scoring import TEXT_WEIGHT

from .e2e import BUDGETS, MEM0, PIPELINE_ROWS, RAW, E2EResult
from .locomo import NO_REPLY
from .quality import CANDIDATES

CATEGORIES = (1, 2, 3, 4)


def _per_user(counts: dict[str, int], users: int) -> str:
    """Mean per user (every user counted, a user with none as 0)."""
    if not counts:
        return "—"
    return f"{sum(counts.values()) / max(users, len(counts)):.1f}"


def _mark(r: E2EResult, name: str, budget: int, category: int | None = None) -> str:
    return "" if r.agreed(name, budget, category) else " †"


def table(r: E2EResult) -> str:
    users = 2 * r.dialogues
    lines = [
        "| row | "
        + " | ".join(f"evidence in block @{b}" for b in BUDGETS)
        + " | "
        + " | ".join(f"block tokens @{b}" for b in BUDGETS)
        + " | beliefs / user | episodes / user | ingest s / turn |",
        "|---|" + "---:|" * (2 * len(BUDGETS) + 3),
    ]
    for name, row in r.rows.items():
        hits = " | ".join(f"{row.summaries[b].in_block:.3f}{_mark(r, name, b)}" for b in BUDGETS)
        tokens = " | ".join(f"{row.summaries[b].mean_tokens:.0f}" for b in BUDGETS)
        beliefs = _per_user(row.beliefs, users) + (" memories" if name == MEM0 else "")
        lines.append(
            f"| {name} | {hits} | {tokens} | {beliefs} | {_per_user(row.episodes, users)} "
            f"| {row.ingest_s_per_turn:.4f} |"
        )
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
        "`Memory` in its default offline configuration (the rule extractor in the "
        f"background worker), each chat flushed at its end; {kinds}. The clock is each "
        "session's date plus the turn's index in seconds, so each stored item's observed "
        "time names its turn; a recalled belief counts through its sources "
        "(`engine.history`), mapped to the user turn (never the reply) they came from. "
        f"**{RAW}**: every turn ADDed by `engine.apply` as a belief of its speaker's user, "
        'as "[8 May 2023] Caroline: text", observed at its instant; recalled with the same '
        f"default block. **{MEM0}**: the same texts, one `Memory.add(message, infer=False)` "
        "each for its speaker's user (dia_id in the metadata); recall = `Memory.search` "
        "with the user filter, its results packed as `- text` lines under a one-line "
        "header.",
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


def chart_data(r: E2EResult) -> dict[str, dict[str, float]]:
    """Evidence in the block, per row and budget (for the chart)."""
    return {
        name: {str(b): row.summaries[b].in_block for b in BUDGETS} for name, row in r.rows.items()
    }
