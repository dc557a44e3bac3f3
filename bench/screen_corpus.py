"""The secret screen on real dialogue: ``python -m bench.screen_corpus [--out FILE]``.

Runs the scan every stored turn goes through (``find_secrets``, as the job payload's scrub
and the op screen use it) over every turn of LoCoMo conversation 26 and the reply that
follows it (the labelled fixture in ``tests/extraction/fixtures``), where no secret is said:
each find is a false positive. Then over ordinary ways of saying a secret, each of which
must be found. Writes the "Secret screen on real dialogue" section of docs/reliability.md.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from mem01session.secrets.scan import find_secrets

from .scrub import ROOT, write

TITLE = "Secret screen on real dialogue"
CORPUS = ROOT / "tests" / "extraction" / "fixtures" / "locomo_conv26.json"
# Ordinary ways of saying a secret (none of them a key format): each must be found.
SAID = (
    "my password is hunter22",
    "the password for gmail.com is Tr0ub4dor&3",
    "My PIN is 7391",
    "Uses the PIN 7391 for the bank",
    "pin code: 4821",
    "Door code is Kx9!mQ2z",
    "Alarm code 4821",
    "The code for the door is Kx9!mQ2z",
    "My passphrase is correct horse battery staple",
    "our wifi code: HomeNet-8821",
    "my api key is sk-proj-AbCdEfGhIjKlMnOpQrStUv12",
    "card 4111 1111 1111 1111 exp 12/29",
)


def texts() -> list[str]:
    turns = json.loads(CORPUS.read_text())["turns"]
    return [t["text"] for t in turns] + [t["reply"] for t in turns if t["reply"]]


def section(command: str) -> str:
    corpus = texts()
    false = [t for t in corpus if find_secrets(t)]
    missed = [t for t in SAID if not find_secrets(t)]
    rows = [
        "| text | how many | with a find |",
        "|---|---:|---:|",
        f"| LoCoMo conversation 26, every turn and reply (no secret said) | {len(corpus):,} | "
        f"{len(false)} (false positives) |",
        f"| ordinary ways of saying a secret (listed in `bench/screen_corpus.py`) | "
        f"{len(SAID)} | {len(SAID) - len(missed)} |",
    ]
    notes = "".join(f"\n- false positive: {json.dumps(t[:120])}" for t in false)
    notes += "".join(f"\n- missed: {json.dumps(t)}" for t in missed)
    return (
        f"## {TITLE}\n\nCommand: `{command}`\n\nThe scan every stored turn goes through "
        "(`mem01session.secrets.scan.find_secrets`: the job payload's scrub and the op "
        "screen), over real dialogue where nobody says a secret, and over ordinary ways of "
        "saying one; `tests/bench/test_screen_corpus.py` fails on any false positive or "
        "miss here.\n\n" + "\n".join(rows) + (f"\n{notes}" if notes else "") + "\n"
    )


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.screen_corpus")
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "reliability.md")
    ap.add_argument("--no-doc", action="store_true")
    args = ap.parse_args(argv)
    command = " ".join(["python -m bench.screen_corpus", *(sys.argv[1:] if argv is None else argv)])
    text = section(command)
    print(text)
    if not args.no_doc:
        write(args.out, text, TITLE)


if __name__ == "__main__":
    main()
