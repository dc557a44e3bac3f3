"""``mem01session ui`` with nothing configured: the embedded server, then Ctrl+C or SIGTERM."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow


@pytest.fixture
def home() -> Iterator[Path]:
    folder = Path(tempfile.mkdtemp(prefix="mem01-ui-home-"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def started(proc: subprocess.Popen[str]) -> str:
    """The server's address (its first line), once Uvicorn's log says it accepts requests."""
    assert proc.stdout is not None and proc.stderr is not None
    match = re.match(r"memory browser on (http://127\.0\.0\.1:\d+/)", proc.stdout.readline())
    assert match, "the browser did not say where it listens"
    seen = []
    for line in proc.stderr:  # ends when the process does
        seen.append(line)
        if "Application startup complete" in line:
            return match.group(1)
    raise AssertionError("the browser exited before serving:\n" + "".join(seen))


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_the_browser_on_the_embedded_server_stops_cleanly(home: Path, stop: signal.Signals) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("MEM01_DATABASE_URL", "DATABASE_URL")}
    env |= {"MEM01_HOME": str(home), "MEM01_EMBEDDING_DIM": "64"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "mem01session", "ui", "--port", "0"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        url = started(proc)
        with urllib.request.urlopen(url, timeout=30) as response:
            assert "No memory recorded yet" in response.read().decode()
        proc.send_signal(stop)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    assert "Traceback" not in err
    assert (home / "pg" / "PG_VERSION").is_file()
    assert not (home / "pg" / "postmaster.pid").exists()  # the embedded server stopped
    handles = home / "pg" / ".handle_pids.json"
    assert not handles.exists() or json.loads(handles.read_text()) == []  # and was let go
