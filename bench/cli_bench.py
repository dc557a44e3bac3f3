"""``python -m bench cli``: how long the ``mem01session`` command takes, as a user meets it.

Every figure is the wall time of a whole process (``python -m mem01session ...``, started
by ``subprocess``), from its start to its exit: interpreter start, imports, the database,
the output. Run on a scratch ``MEM01_HOME`` with nothing configured (the embedded server,
the default embedder and tokenizer), seeded by ``mem01session demo --keep``.

* ``--help`` and ``--version``: no database.
* "first command": the embedded server is not running, so the command starts it (and
  stops it on its way out).
* every inspector command with the server already running: held by another process, as
  an application, ``mem01session ui`` or ``mem01session db start`` holds it.
* ``db start`` / ``db stop``, when the command has them.
* "first output": how long a long command (the demo, the memory browser) is silent.

With ``--tests`` the quick test subset (``pytest -m "not slow"``) is timed as well, and
with ``--full-suite`` the whole suite: the counts and seconds are what pytest prints.

The command under test is whatever ``python -m mem01session`` imports, so the same module
measures another checkout: ``PYTHONPATH=OTHER/src python -m bench cli --no-doc``.
"""

from __future__ import annotations

import json
import os
import re
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

HELP_TARGET = 0.5
READ_TARGET = 1.0

HOLDER = """
import sys, time
from pathlib import Path
from mem01session.db.embedded import embedded_url
embedded_url(Path(sys.argv[1]))
print("ready", flush=True)
sys.stdin.read()
"""


@dataclass
class Timed:
    """One command, run ``len(seconds)`` times."""

    label: str
    args: tuple[str, ...]
    seconds: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    """CPU seconds (user + system) of each run's process."""
    target: float | None = None
    failed: str | None = None
    first_output: float | None = None

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)

    @property
    def worst(self) -> float:
        return max(self.seconds)


@dataclass
class TestRun:
    command: str
    summary: str
    seconds: float


@dataclass
class CliResult:
    rows: list[Timed]
    runs: int
    load_before: tuple[float, float, float]
    load_after: tuple[float, float, float]
    version: str
    tests: list[TestRun] = field(default_factory=list)
    seconds: float = 0.0


def _env(home: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("MEM01_DATABASE_URL", "DATABASE_URL", "OPENAI_API_KEY", "OPENAI_BASE_URL")
        and not k.startswith("MEM01_EMBEDDING")
    }
    env["MEM01_HOME"] = str(home)
    env["OPENAI_AGENTS_DISABLE_TRACING"] = "1"
    env["COLUMNS"] = "80"
    return env


def _cli(args: Sequence[str]) -> list[str]:
    return [sys.executable, "-m", "mem01session", *args]


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _once(args: Sequence[str], env: dict[str, str]) -> tuple[float, int, str, float]:
    """Wall seconds, exit code, output and CPU seconds of one process."""
    cpu, started = _cpu(), time.perf_counter()
    proc = subprocess.run(_cli(args), env=env, capture_output=True, text=True, timeout=600)
    seconds = time.perf_counter() - started
    return seconds, proc.returncode, proc.stdout + proc.stderr, _cpu() - cpu


def _time(row: Timed, env: dict[str, str], runs: int) -> Timed:
    for _ in range(runs):
        seconds, code, out, cpu = _once(row.args, env)
        if code != 0:
            row.failed = " ".join(out.split())[:120] or f"exit {code}"
            return row
        row.seconds.append(seconds)
        row.cpu.append(cpu)
    return row


def _first_output(
    args: Sequence[str], env: dict[str, str], *, stop: bool
) -> tuple[float, float, str]:
    """Seconds to the first byte of output and to the exit, and the output (``stop``:
    SIGTERM once it spoke, for a command that runs until stopped)."""
    started = time.perf_counter()
    proc = subprocess.Popen(_cli(args), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    assert proc.stdout is not None
    head = proc.stdout.read(1)
    first = time.perf_counter() - started
    if stop:
        proc.send_signal(signal.SIGTERM)
    rest = proc.stdout.read()
    proc.wait(timeout=600)
    return first, time.perf_counter() - started, (head + rest).decode(errors="replace")


@contextmanager
def _held(home: Path, env: dict[str, str]) -> Iterator[None]:
    """The embedded server kept running by another process for the duration."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(home)],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdin is not None
    try:
        if proc.stdout.readline().strip() != "ready":
            raise RuntimeError("the process holding the embedded server did not start")
        yield
    finally:
        proc.stdin.close()
        proc.wait(timeout=120)


def _pytest(args: Sequence[str]) -> TestRun:
    command = "python -m pytest -q -p no:cacheprovider " + " ".join(args)
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
        capture_output=True,
        text=True,
    )
    seconds = time.perf_counter() - started
    tail = [line for line in proc.stdout.splitlines() if re.search(r" in [\d.]+s", line)]
    summary = tail[-1].strip("= ") if tail else f"exit {proc.returncode}"
    return TestRun(command.strip(), summary, seconds)


def run(*, runs: int = 5, tests: bool = False, full_suite: bool = False) -> CliResult:
    started = time.perf_counter()
    home = Path(tempfile.mkdtemp(prefix="mem01-bench-cli-"))
    env = _env(home)
    load_before = os.getloadavg()
    try:
        _, code, said, _ = _once(["--version"], env)
        version = said.strip() if code == 0 else "a mem01session without --version"
        rows = [
            _time(Timed("--help", ("--help",), target=HELP_TARGET), env, runs),
            _time(Timed("--version", ("--version",), target=HELP_TARGET), env, runs),
        ]
        first, total, said = _first_output(["demo", "--keep"], env, stop=False)
        rows.append(Timed("demo --keep (fresh home)", ("demo",), [total], first_output=first))
        kept = re.search(r"kept user (\S+) for inspection", said)
        if kept is None:
            raise RuntimeError(f"the demo kept no user: {said[-2000:]}")
        user = kept.group(1)
        listed = _once(["beliefs", "list", "--all", "--json", "--user", user], env)[2]
        belief = json.JSONDecoder().raw_decode(listed[listed.index("[") :])[0][0]["id"]
        reading = [
            ("beliefs list", ("beliefs", "list", "--user", user)),
            ("beliefs list --all", ("beliefs", "list", "--all", "--user", user)),
            ("beliefs history", ("beliefs", "history", "--user", user)),
            ("beliefs show", ("beliefs", "show", str(belief), "--user", user)),
            ("episodes list", ("episodes", "list", "--user", user)),
            ("users", ("users",)),
            ("jobs list", ("jobs", "list")),
            ("db current", ("db", "current")),
            ("db history", ("db", "history")),
            ("recall", ("recall", "--user", user, "where do I live?")),
            ("recall --explain", ("recall", "--user", user, "where do I live?", "--explain")),
        ]
        rows.append(
            _time(Timed("first command: beliefs list (server not running)", reading[0][1]), env, 1)
        )
        with _held(home, env):
            for label, args in reading:
                target = None if label.startswith("recall") else READ_TARGET
                row = Timed(f"{label} (server running)", args, target=target)
                rows.append(_time(row, env, runs))
            first, total, _ = _first_output(["ui", "--port", "0"], env, stop=True)
            rows.append(Timed("ui (server running)", ("ui",), [total], first_output=first))
        first, total, _ = _first_output(["ui", "--port", "0"], env, stop=True)
        rows.append(Timed("ui (server not running)", ("ui",), [total], first_output=first))
        rows.append(_time(Timed("db start", ("db", "start")), env, 1))
        if rows[-1].failed is None:
            rows.append(_time(Timed("db stop", ("db", "stop")), env, 1))
        test_runs = []
        if tests:
            test_runs.append(_pytest(["-m", "not slow"]))
        if full_suite:
            test_runs.append(_pytest([]))
        return CliResult(
            rows, runs, load_before, os.getloadavg(), version, test_runs,
            time.perf_counter() - started,
        )  # fmt: skip
    finally:
        _once(["db", "stop"], env)  # in case a step failed while the server was kept
        shutil.rmtree(home, ignore_errors=True)


def table(r: CliResult) -> str:
    head = (
        "| command | median s | worst s | runs | target s | within | CPU s (median) "
        "| first output s |\n|---|---:|---:|---:|---:|---|---:|---:|"
    )
    lines = [head]
    for row in r.rows:
        if row.failed is not None:
            lines.append(f"| `{row.label}` | - | - | - | - | not available: {row.failed} | - | - |")
            continue
        target = f"{row.target:.1f}" if row.target is not None else "-"
        within = "-" if row.target is None else ("yes" if row.worst < row.target else "**no**")
        first = f"{row.first_output:.2f}" if row.first_output is not None else "-"
        cpu = f"{statistics.median(row.cpu):.2f}" if row.cpu else "-"
        lines.append(
            f"| `{row.label}` | {row.median:.2f} | {row.worst:.2f} | {len(row.seconds)} | "
            f"{target} | {within} | {cpu} | {first} |"
        )
    if r.tests:
        lines.append("")
        lines.append("| tests | pytest's summary | wall s |\n|---|---|---:|")
        for t in r.tests:
            lines.append(f"| `{t.command}` | {t.summary} | {t.seconds:.0f} |")
    return "\n".join(lines)


def note(r: CliResult) -> str:
    before = ", ".join(f"{x:.2f}" for x in r.load_before)
    after = ", ".join(f"{x:.2f}" for x in r.load_after)
    return (
        f"`{r.version}`. Each figure is the wall time of one whole `python -m mem01session` "
        "process (interpreter start to exit), on a scratch `MEM01_HOME` seeded by `demo "
        f"--keep`, nothing configured (embedded server, default embedder and tokenizer); "
        f"{r.runs} runs each unless the runs column says otherwise. 'server running': another "
        "process holds the embedded server, as an application, `mem01session ui` or "
        "`mem01session db start` does; without one, every command starts and stops it. "
        "`recall` embeds the question (the local model is loaded) and counts tokens (the "
        "tokenizer is loaded): it has no target here. 'within': the worst run under the "
        "target. 'CPU s': user + system time of the process, which a busy machine changes "
        "less than the wall time. 'first output': seconds until the command printed "
        "anything (a pipe, not a terminal). Load average (1, 5, 15 min) before: "
        f"{before}; after: {after}: figures taken on a busy machine run slower. "
        f"Took {r.seconds:.0f} s."
    )
