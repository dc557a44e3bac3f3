"""A real memory browser (Uvicorn on a free loopback port) in a thread, for the tests that
talk HTTP to it: the server test and the browser test."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from mem01session.config import Settings
from mem01session.ui.server import BrowserServer

START_TIMEOUT = 60.0


@contextmanager
def live_browser(settings: Settings | None = None, **options: object) -> Iterator[BrowserServer]:
    """Start a :class:`BrowserServer` on port 0 in a thread; stop it on exit."""
    server = BrowserServer(settings, port=0, log_level="warning", **options)  # type: ignore[arg-type]
    failure: list[BaseException] = []

    def run() -> None:
        try:
            asyncio.run(server.serve())
        except BaseException as exc:  # reported to the test below
            failure.append(exc)
            server.ready.set()

    thread = threading.Thread(target=run, name="memory-browser", daemon=True)
    thread.start()
    try:
        assert server.ready.wait(START_TIMEOUT), "the memory browser did not start"
        if failure:
            raise failure[0]
        yield server
    finally:
        server.stop()
        thread.join(START_TIMEOUT)
        assert not thread.is_alive(), "the memory browser did not stop"
