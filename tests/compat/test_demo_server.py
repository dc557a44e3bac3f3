"""`mem01session demo` against the fake server in its strictest mode, in a subprocess.

500 on json_schema, roles must alternate, no /v1/responses, no embeddings endpoint: the
demo completes without a traceback, its checks pass, and Friday's answer was given San
Francisco. The server runs in this process; the demo reaches it over HTTP.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from mem01session.demo.run import QUESTION
from tests.compat.server import STRICTEST, FakeServer


@pytest.mark.slow
def test_the_demo_runs_against_the_strictest_server(server: FakeServer) -> None:
    server.reset(STRICTEST)
    home = Path(tempfile.mkdtemp(prefix="mem01-compat-demo-"))
    out = home / "evidence.json"
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("MEM01_", "OPENAI_")) and k != "DATABASE_URL"
    }
    env |= {
        "MEM01_HOME": str(home),
        "OPENAI_API_KEY": "sk-local-dummy",
        "OPENAI_BASE_URL": server.url,
        "OPENAI_AGENTS_DISABLE_TRACING": "1",
    }
    command = [sys.executable, "-m", "mem01session", "demo", "--check", "--json", str(out)]
    try:
        proc = subprocess.run(
            [*command, "--model", "gemma-3-270m-it"],
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
        )
        output = proc.stdout + proc.stderr
        assert proc.returncode == 0, output[-4000:]
        evidence = json.loads(out.read_text())
    finally:
        shutil.rmtree(home, ignore_errors=True)

    assert "Traceback" not in output
    assert evidence["passed"] is True, evidence["checks"]
    assert "Chat Completions" in evidence["offline"]["answers"]
    assert evidence["offline"]["extraction"] == "openai:gemma-3-270m-it:extract_v2"
    assert {r.body.get("model") for r in server.chats()} == {"gemma-3-270m-it"}  # --model
    assert set(server.paths()) == {"chat"}  # never /v1/responses, never /v1/embeddings
    friday = [
        r.prompt or "" for r in server.chats(extraction=False) if QUESTION in (r.prompt or "")
    ]
    with_memory = [p for p in friday if "<memory>" in p]
    assert with_memory and "San Francisco" in with_memory[-1]
    memory_answer = evidence["strategies"][2]["answer"]
    assert "San Francisco" in memory_answer
