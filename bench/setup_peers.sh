#!/usr/bin/env bash
# Create bench/.peers/venv with the peers (mem0ai, mem01-engine) and matplotlib.
# Idempotent: reinstalls only when bench/peers.txt changed since the last install.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
venv="$here/.peers/venv"
stamp="$venv/.peers.txt"
python="${PYTHON:-python3}"
if [[ -f "$stamp" ]] && cmp -s "$stamp" "$here/peers.txt"; then
  echo "peers venv up to date: $venv"
  exit 0
fi
mkdir -p "$here/.peers"
"$python" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --upgrade pip
"$venv/bin/python" -m pip install --quiet -r "$here/peers.txt"
cp "$here/peers.txt" "$stamp"
"$venv/bin/python" -m pip list 2>/dev/null | grep -iE '^(mem0ai|mem01-engine|matplotlib) '
