"""Which tests start a process: each must be marked ``slow``, so that the quick subset
(``-m "not slow"``) starts none.

:func:`watch` patches ``subprocess.Popen`` (which ``asyncio``'s subprocesses and
``multiprocessing``'s spawn go through too) and ``os.fork`` once per test process; the
autouse fixture in ``conftest.py`` asks :func:`started_during` what a test started, from
its first function-scoped fixture to its last teardown (processes of session- and
module-scoped fixtures, such as the shared test server, are started before it looks).
"""

from __future__ import annotations

import os
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

_lock = threading.Lock()
_started: list[str] = []
_watching = False


def _record(what: str) -> None:
    with _lock:
        _started.append(what)


def watch() -> None:
    """Record every process started from now on in this process (idempotent)."""
    global _watching
    if _watching:
        return
    _watching = True
    original_init = subprocess.Popen.__init__

    def init(self: subprocess.Popen[Any], args: Any, *rest: Any, **kwargs: Any) -> None:
        first = args if isinstance(args, (str, bytes, os.PathLike)) else next(iter(args), "")
        _record(os.path.basename(os.fsdecode(first)))
        original_init(self, args, *rest, **kwargs)

    subprocess.Popen.__init__ = init  # type: ignore[method-assign]
    if hasattr(os, "fork"):
        original_fork = os.fork

        def fork() -> int:
            _record("fork")
            return original_fork()

        os.fork = fork


@contextmanager
def started_during() -> Iterator[list[str]]:
    """The names of the processes started while the block runs."""
    with _lock:
        start = len(_started)
    found: list[str] = []
    try:
        yield found
    finally:
        with _lock:
            found.extend(_started[start:])
