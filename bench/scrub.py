"""Scrub speed: ``python -m bench.scrub [--runs 9] [--baseline REV] [--out docs/reliability.md]``.

Times the scrub every turn goes through before it is stored as a job
(``mem01session.queue.job_records.scrub``: ``redact`` then ``redact_secrets``) on 10 KB, 100 KB
and 1 MB of ordinary English text and of a pasted hex blob, plus worst cases at 100 KB
and 1 MB, and writes the table into the "Scrubbing speed" section of docs/reliability.md
(replaced in place on a rerun). ``--baseline REV`` also times the two modules as they
were at git revision REV, once per input, each run stopped after ``--timeout`` seconds.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import signal
import statistics
import subprocess
import sys
import time
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from mem01session.secrets.redaction import redact
from mem01session.secrets.scan import redact_secrets

ROOT = Path(__file__).resolve().parent.parent
TITLE = "Scrubbing speed"
SIZES = (10_000, 100_000, 1_000_000)
Scrub = Callable[[str], str]

# Sentences of the kind users say, numbers included ("$2,400", years, a phone number):
# none of them holds a secret.
SENTENCES = (
    "I live in Lisbon now, after six years in New York.",
    "My rent is $2,400 a month and the lease ends in 2027.",
    "We adopted a cat named Miso last spring.",
    "I'm allergic to peanuts, so please skip anything with satay.",
    "Call me at 555-123-4567 after six.",
    "My daughter starts school on September 4th.",
    "I prefer window seats and I never check a bag.",
    "The meeting moved to Thursday at 10:30 because Ana is travelling.",
    "I ran the Berlin marathon in 3 hours 41 minutes.",
    "Our team uses Python 3.11 and PostgreSQL 18 for the billing service.",
    "Remind me that the dentist is on the 12th, not the 21st.",
    "I switched from coffee to green tea in January.",
    "My favourite book is still The Left Hand of Darkness.",
    "I'm vegetarian, but I eat fish once in a while.",
    "The flat has two bedrooms, a balcony and a very small kitchen.",
    "I was born in 1987 in Porto and moved to London in 2009.",
    "Please keep answers short; I read them on my phone.",
    "Last week I started learning the cello, about 20 minutes a day.",
    "I work remotely on Mondays and Fridays.",
    "My brother's wedding is in Kyoto on 14 May 2026.",
)


def english(size: int, seed: int = 1) -> str:
    rng = random.Random(seed)
    parts: list[str] = []
    length = 0
    while length < size:
        sentence = rng.choice(SENTENCES)
        parts.append(sentence)
        length += len(sentence) + 1
    return " ".join(parts)[:size]


def hex_blob(size: int, seed: int = 2) -> str:
    head = "Here is the dump you asked for: "
    rng = random.Random(seed)
    return head + "".join(rng.choice("0123456789abcdef") for _ in range(size - len(head)))


def repeated(unit: str) -> Callable[[int], str]:
    return lambda size: (unit * (size // len(unit) + 1))[:size]


INPUTS: dict[str, Callable[[int], str]] = {"English text": english, "pasted hex blob": hex_blob}
# The message from issue 14, and inputs that made the old patterns backtrack.
WORST: dict[str, Callable[[int], str]] = {
    '"I like hiking. " + "x" * N': lambda n: ("I like hiking. " + "x" * n)[:n],
    '"a:" * N': repeated("a:"),
    '"a://b:" * N': repeated("a://b:"),
    '"eyJ-" * N': repeated("eyJ-"),
    '"1 " * N': repeated("1 "),
    '"password is " * N': repeated("password is "),
    "secrets only: a password phrase, a key and a DSN, repeated": repeated(
        "my password is hunter2 and key sk-proj-Q3x9LmT2vR8kP4nB7wZ1cY6d "
        "postgres://bob:s3cret@db/app "
    ),
}


def scrub(text: str) -> str:
    """What ``mem01session.queue.job_records.scrub`` does to each message of a turn."""
    return redact_secrets(redact(text))[0]


def median_seconds(fn: Scrub, text: str, runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        fn(text)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


class _Timeout(Exception):
    pass


@contextmanager
def _deadline(seconds: float) -> Iterator[None]:
    def stop(*_: object) -> None:
        raise _Timeout

    previous = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def baseline(rev: str) -> Scrub:
    """The scrub as it was at git revision ``rev`` (its two modules use only stdlib)."""
    modules = {}
    for name in ("redaction", "secret_scan"):  # their paths at that revision
        source = subprocess.run(
            ["git", "show", f"{rev}:src/mem01session/{name}.py"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        module = types.ModuleType(f"bench_scrub_baseline_{name}")
        sys.modules[module.__name__] = module  # dataclasses look their module up there
        exec(compile(source, f"{rev}:{name}.py", "exec"), module.__dict__)
        modules[name] = module
    old_redact = modules["redaction"].redact
    old_redact_secrets = modules["secret_scan"].redact_secrets
    return lambda text: old_redact_secrets(old_redact(text))[0]


@dataclass
class Row:
    kind: str
    size: int
    seconds: float
    before: float | None = None  # None: not measured; inf: stopped at the timeout


def run(
    runs: int, old: Scrub | None, timeout: float, log: Callable[[str], None] = print
) -> list[Row]:
    rows: list[Row] = []
    cases = [(k, s, f) for k, f in INPUTS.items() for s in SIZES]
    cases += [(k, s, f) for k, f in WORST.items() for s in SIZES[1:]]
    for kind, size, make in cases:
        text = make(size)
        scrub(text)  # warm up
        row = Row(kind, size, median_seconds(scrub, text, runs))
        if old is not None:
            try:
                with _deadline(timeout):
                    row.before = median_seconds(old, text, 1)
            except _Timeout:
                row.before = float("inf")
        log(f"{kind[:40]:40} {size:>9,} {row.seconds * 1000:9.2f} ms")
        rows.append(row)
    return rows


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:,.1f}" if seconds < 10 else f"{seconds * 1000:,.0f}"


def table(rows: list[Row], rev: str | None, timeout: float) -> str:
    head = "| input | size | median ms | µs per KB |"
    rule = "|---|---:|---:|---:|"
    if rev:
        head += f" before ({rev}), ms |"
        rule += "---:|"
    lines = [head, rule]
    for r in rows:
        line = f"| {r.kind} | {r.size // 1000:,} KB | {_ms(r.seconds)} | "
        line += f"{r.seconds * 1e6 / (r.size / 1000):,.1f} |"
        if rev:
            before = r.before
            text = (
                ""
                if before is None
                else f"> {timeout * 1000:,.0f}"
                if before == float("inf")
                else _ms(before)
            )
            line += f" {text} |"
        lines.append(line)
    return "\n".join(lines)


def load_average() -> float:
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")


def section(
    rows: list[Row], command: str, runs: int, rev: str | None, timeout: float, load: float
) -> str:
    machine = f"{os.cpu_count()} CPUs, Python {platform.python_version()}, {platform.system()}"
    notes = (
        f"Median of {runs} runs of `redact_secrets(redact(text))` (what "
        "`mem01session.queue.job_records.scrub` does to each message before a turn is stored "
        "as a job), after one warm-up run, on one thread. 1 KB = 1,000 characters. "
        "English text: the sentences in `bench/scrub.py`, shuffled (numbers, a phone "
        "number, no secret). Hex blob: one line of prose, then random hex digits. Of the "
        "worst cases, the last is nothing but secrets, so every few characters is a find "
        "to check and replace."
    )
    if rev:
        notes += (
            f" Before: the same two modules at `{rev}`, one run each, stopped after "
            f"{timeout:,.0f} s."
        )
    return (
        f"## {TITLE}\n\nCommand: `{command}`\n\n"
        f"Run on {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {machine}, "
        f"load average {load:.1f} at the start.\n\n{table(rows, rev, timeout)}\n\n{notes}\n"
    )


def write(path: Path, text: str, title: str = TITLE) -> None:
    """Replace the section ``title`` in place, or put it before the soak figures (which
    ``bench.soak`` rewrites to the end of the file)."""
    doc = path.read_text() if path.exists() else "# Reliability\n"
    heading = f"## {title}\n"
    if heading in doc:
        head, _, tail = doc.partition(heading)
        rest = tail.split("\n## ", 1)
        doc = head + text + ("\n## " + rest[1] if len(rest) > 1 else "")
    elif "## Soak figures" in doc:
        head, _, tail = doc.partition("## Soak figures")
        doc = head + text + "\n## Soak figures" + tail
    else:
        doc = doc.rstrip("\n") + "\n\n" + text
    path.write_text(doc)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.scrub")
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--baseline", metavar="REV", help="also time the scrub at git revision REV")
    ap.add_argument("--timeout", type=float, default=30.0, help="seconds per baseline run")
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "reliability.md")
    ap.add_argument("--no-doc", action="store_true")
    args = ap.parse_args(argv)
    command = " ".join(["python -m bench.scrub", *(sys.argv[1:] if argv is None else argv)])
    old = baseline(args.baseline) if args.baseline else None
    load = load_average()
    rows = run(args.runs, old, args.timeout)
    text = section(rows, command, args.runs, args.baseline, args.timeout, load)
    print(text)
    if not args.no_doc:
        write(args.out, text)


if __name__ == "__main__":
    main()
