"""JSON-lines request loop shared by the peer drivers (runs in the peers' virtualenv).

Each request is one JSON object with an ``op``; each reply one JSON object on stdout,
``{"ok": true, ...}`` or ``{"ok": false, "error": "..."}``. Anything the peer libraries
print goes to stderr so that stdout stays a clean channel.
"""

from __future__ import annotations

import json
import sys
import time
import traceback
from collections.abc import Callable
from typing import Any

Handler = Callable[[dict[str, Any]], dict[str, Any]]


class Vectors:
    """The precomputed vectors the harness sends; an embedder that is never a model."""

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self.table: dict[str, list[float]] = {}

    def remember(self, text: str, vector: list[float]) -> None:
        self.table[text] = vector

    def get(self, text: str) -> list[float]:
        try:
            return self.table[text]
        except KeyError:
            raise KeyError(f"no precomputed vector for {text[:60]!r}") from None


def timed(call: Callable[[], Any]) -> tuple[Any, float]:
    started = time.perf_counter()
    result = call()
    return result, (time.perf_counter() - started) * 1000.0


def serve(handlers: dict[str, Handler]) -> None:
    out = sys.stdout
    sys.stdout = sys.stderr  # peers' prints must not corrupt the channel
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        try:
            reply = {"ok": True, **handlers[request["op"]](request)}
        except Exception as exc:  # report, keep serving
            traceback.print_exc(file=sys.stderr)
            reply = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
        out.write(json.dumps(reply) + "\n")
        out.flush()
        if request["op"] == "quit":
            return
