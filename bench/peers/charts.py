"""Draws the report's PNG charts from a JSON file (runs in the peers' venv: matplotlib).

Usage: charts.py DATA.json OUT_DIR
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt


def latency(data: dict, out: Path) -> None:
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for name, by_scale in data.items():
        scales = sorted(int(s) for s in by_scale)
        [line] = ax.plot(
            scales, [by_scale[str(s)][0] for s in scales], marker="o", label=f"{name} p50"
        )
        ax.plot(
            scales,
            [by_scale[str(s)][1] for s in scales],
            ls="--",
            alpha=0.5,
            color=line.get_color(),
            label=f"{name} p95",
        )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("beliefs in the database (100 per user)")
    ax.set_ylabel("recall latency, ms")
    ax.set_title("Recall latency vs scale")
    ax.legend(fontsize=7)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(out / "bench-latency.png", dpi=110)


def quality(
    data: dict,
    out: Path,
    filename: str = "bench-recall.png",
    title: str = "LoCoMo retrieval: recall versus budget",
    xlabel: str = "memory block budget, tokens",
) -> None:
    """Evidence in the block against the block's token budget, one line per system."""
    fig, ax = plt.subplots(figsize=(7, 4.2))
    ceiling = data.pop("__ceiling__", None)
    for name, by_budget in data.items():
        budgets = sorted(int(b) for b in by_budget)
        ax.plot(budgets, [by_budget[str(b)] for b in budgets], marker="o", label=name)
    if ceiling is not None:
        ax.axhline(ceiling, ls=":", color="grey", label="ceiling (evidence covered at all)")
    ax.set_xscale("log", base=2)
    ax.set_xticks(budgets, [str(b) for b in budgets])
    ax.set_xlabel(xlabel)
    ax.set_ylabel("questions whose evidence is in the block")
    ax.set_title(title)
    ax.legend(fontsize=7)
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(out / filename, dpi=110)


def load(data: dict, out: Path) -> None:
    """The job backlog over time, one line per machine state; a mark where the turns ended."""
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for name, phase in data["phases"].items():
        points = phase["backlog"]
        [line] = ax.plot([t for t, _ in points], [n for _, n in points], label=name)
        ax.axvline(phase["turns_end_s"], ls=":", color=line.get_color(), alpha=0.7)
    ax.set_xlabel("seconds since the first turn (dotted: the last turn answered)")
    ax.set_ylabel("jobs pending or running")
    ax.set_title(data["title"])
    ax.legend(fontsize=7)
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(out / "bench-load.png", dpi=110)


def main() -> None:
    data = json.loads(Path(sys.argv[1]).read_text())
    out = Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    if data.get("latency"):
        latency(data["latency"], out)
    if data.get("quality"):
        quality(data["quality"], out)
    if data.get("load"):
        load(data["load"], out)
    if data.get("e2e"):
        quality(
            data["e2e"],
            out,
            "bench-e2e.png",
            "LoCoMo end to end: real dialogue through the Runner",
            "memory block budget per speaker, tokens",
        )


if __name__ == "__main__":
    main()
