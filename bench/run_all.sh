#!/usr/bin/env bash
# Reproduce every table and chart of docs/benchmarks.md from scratch: the project's own
# virtualenv (bench/.peers/project, with this checkout installed) and the peers' one
# (bench/.peers/venv) are created when missing. Extra arguments go to `python -m bench all`.
set -euo pipefail
cd "$(dirname "$0")/.."
python="${PYTHON:-}"
if [[ -z "$python" ]]; then
  project="bench/.peers/project"
  if [[ ! -x "$project/bin/python" ]] || ! "$project/bin/python" -c "import mem01session" 2>/dev/null; then
    python3 -m venv "$project"
    "$project/bin/python" -m pip install --quiet --upgrade pip
    "$project/bin/python" -m pip install --quiet -e .
  fi
  python="$project/bin/python"
fi
bash bench/setup_peers.sh
exec "$python" -m bench all --out docs/benchmarks.md --skip-setup "$@"
