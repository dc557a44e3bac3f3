"""Instructions told from facts: ``python -m bench.directive_corpus [--out FILE]``.

Runs the check every proposed op goes through (``extraction.directives.directive``, in the
worker's screen) over the injection attempts of ``tests/extraction/fixtures/injections.txt``
(each must be caught: as the statement a model could write of it, and through the rule
extractor, where it must leave no belief), and over ordinary sentences (the look-alikes of
``ordinary.txt``, and every turn and reply of LoCoMo conversation 26, from the labelled
fixture), where each find is a false positive. Writes the "Instructions screened" section
of docs/reliability.md; ``tests/extraction/test_directives.py`` fails on any miss or false
positive.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from datetime import UTC, datetime
from pathlib import Path

from mem01session.extraction import RuleExtractor, Turn, TurnMessage
from mem01session.extraction.directives import directive
from mem01session.extraction.hygiene import screen

from .scrub import ROOT, write

TITLE = "Instructions screened"
FIXTURES = ROOT / "tests" / "extraction" / "fixtures"


def lines(name: str) -> list[str]:
    text = (FIXTURES / name).read_text(encoding="utf-8")
    return [line for line in text.splitlines() if line and not line.startswith("#")]


def locomo() -> list[str]:
    turns = json.loads((FIXTURES / "locomo_conv26.json").read_text())["turns"]
    return [t["text"] for t in turns] + [t["reply"] for t in turns if t["reply"]]


async def _rule_beliefs(texts: list[str]) -> tuple[int, int]:
    """What the rule extractor proposes of ``texts``, and what the screen keeps of it."""
    extractor, now = RuleExtractor(), datetime.now(UTC)
    proposed = kept = 0
    for text in texts:
        ops = (await extractor.extract(Turn("c", (TurnMessage("user", text),), now), [], now)).ops
        proposed += len(ops)
        kept += len(screen(ops).ops)
    return proposed, kept


def section(command: str) -> str:
    attempts, ordinary, dialogue = lines("injections.txt"), lines("ordinary.txt"), locomo()
    caught = [t for t in attempts if directive(t)]
    _, kept = asyncio.run(_rule_beliefs(attempts))
    flagged = [t for t in ordinary + dialogue if directive(t)]
    real_proposed, real_kept = asyncio.run(_rule_beliefs(dialogue))
    rows = [
        "| text | how many | caught as addressed to the assistant |",
        "|---|---:|---:|",
        f"| injection attempts (`tests/extraction/fixtures/injections.txt`) | {len(attempts)} "
        f"| {len(caught)} |",
        f"| ordinary look-alikes (`ordinary.txt`: a gender reveal party, ignoring the noise) "
        f"| {len(ordinary)} | {sum(1 for t in ordinary if directive(t))} (false positives) |",
        f"| LoCoMo conversation 26, every turn and reply | {len(dialogue):,} "
        f"| {sum(1 for t in dialogue if directive(t))} (false positives) |",
    ]
    notes = "".join(f"\n- missed: {json.dumps(t)}" for t in attempts if not directive(t))
    notes += "".join(f"\n- false positive: {json.dumps(t[:120])}" for t in flagged)
    return (
        f"## {TITLE}\n\nCommand: `{command}`\n\nThe check every proposed op goes through "
        "in the worker's screen, whichever extractor proposed it "
        "(`mem01session.extraction.directives.directive`): a statement addressed to the "
        "assistant is not stored as a belief, its words stay an episode, and the job's notes "
        "say why.\n\n" + "\n".join(rows) + (f"\n{notes}" if notes else "") + "\n\n"
        "Through the rule extractor (whose answer is screened like any extractor's), the "
        f"injection attempts left {kept} beliefs to store; LoCoMo's turns left {real_kept} "
        f"(of {real_proposed} it proposed: none lost to the check).\n"
    )


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.directive_corpus")
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "reliability.md")
    ap.add_argument("--no-doc", action="store_true")
    args = ap.parse_args(argv)
    command = " ".join(
        ["python -m bench.directive_corpus", *(sys.argv[1:] if argv is None else argv)]
    )
    text = section(command)
    print(text)
    if not args.no_doc:
        write(args.out, text, TITLE)


if __name__ == "__main__":
    main()
