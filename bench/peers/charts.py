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


def quality(data: dict, out: Path) -> None:
    names = list(data)
    keys = [("at5", "@5"), ("at10", "@10"), ("in_block", "in 800-token block")]
    fig, ax = plt.subplots(figsize=(8, 4.2))
    width = 0.8 / len(keys)
    for i, (key, label) in enumerate(keys):
        xs = [n + i * width for n in range(len(names))]
        ax.bar(xs, [data[n][key] for n in names], width, label=label)
    ax.set_xticks([n + width for n in range(len(names))], names, rotation=15, fontsize=8)
    ax.set_ylabel("recall_any")
    ax.set_ylim(0, 1)
    ax.set_title("LoCoMo retrieval: recall_any per system")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "bench-recall.png", dpi=110)


def main() -> None:
    data = json.loads(Path(sys.argv[1]).read_text())
    out = Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    if data.get("latency"):
        latency(data["latency"], out)
    if data.get("quality"):
        quality(data["quality"], out)


if __name__ == "__main__":
    main()
