"""Runs a system's driver in a process of its own and talks JSON lines with it.

The peers (mem0ai, mem01-engine) are never imported here: each driver is a separate
process started with ``bench/.peers/venv/bin/python``. This project's driver
(:mod:`bench.ours_driver`, for the latency benchmark) runs with this interpreter.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
PEERS_PYTHON = HERE / ".peers" / "venv" / "bin" / "python"
DRIVERS = {
    "mem0": [str(PEERS_PYTHON), str(HERE / "peers" / "mem0_driver.py")],
    "mem01-engine": [str(PEERS_PYTHON), str(HERE / "peers" / "mem01_engine_driver.py")],
    "mem01session": [sys.executable, "-m", "bench.ours_driver"],
}


class PeerError(RuntimeError):
    pass


class Peer:
    """One driver process; ``call`` sends a request and waits for its reply."""

    def __init__(self, name: str, log: Path) -> None:
        command = DRIVERS[name]
        if not Path(command[0]).exists():
            raise PeerError(f"no peers venv at {PEERS_PYTHON}: run bash bench/setup_peers.sh")
        self.name = name
        log.parent.mkdir(parents=True, exist_ok=True)
        self._log = log.open("a")
        self._proc = subprocess.Popen(
            command,
            cwd=HERE.parent,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            text=True,
            bufsize=1,
        )
        self.version = "?"

    def call(self, op: str, **fields: Any) -> dict[str, Any]:
        assert self._proc.stdin is not None and self._proc.stdout is not None
        self._proc.stdin.write(json.dumps({"op": op, **fields}) + "\n")
        self._proc.stdin.flush()
        line = self._proc.stdout.readline()
        if not line:
            raise PeerError(f"{self.name} driver died (see {self._log.name})")
        reply: dict[str, Any] = json.loads(line)
        if not reply.pop("ok"):
            raise PeerError(f"{self.name}: {reply.get('error')}")
        return reply

    def setup(self, url: str, dim: int, workdir: str, llm: dict[str, str] | None = None) -> str:
        """``llm``: the chat server a peer's model calls go to (``url``, ``model``,
        ``api_key``); none: the peer is never to call one."""
        reply = self.call("setup", url=url, dim=dim, workdir=workdir, llm=llm)
        self.version = str(reply["version"])
        return self.version

    def close(self) -> None:
        if self._proc.poll() is None:
            with contextlib.suppress(PeerError, OSError, ValueError):
                self.call("quit")
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
        self._log.close()

    def __enter__(self) -> Peer:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()
