#!/usr/bin/env bash
# Reproduce every table and chart of docs/benchmarks.md from scratch (peers' venv included).
set -euo pipefail
cd "$(dirname "$0")/.."
python="${PYTHON:-python}"
bash bench/setup_peers.sh
exec "$python" -m bench all --out docs/benchmarks.md --skip-setup "$@"
