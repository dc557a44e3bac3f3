"""Running a command on the memory: open it, run, close; and lookups that fail cleanly.

For the commands that change memory or recall it; those that only read it (the inspector
commands) read through :mod:`._reads`, without SQLAlchemy. Imported inside the commands,
never at module level: it loads the engine (SQLAlchemy, psycopg). The memory runs no
worker here (``run_worker=False``): a command extracts nothing, so the extractor (the
OpenAI client, the Agents SDK) is never loaded. Errors are not caught here: the root
group's handler (:mod:`._errors`) turns whatever escapes into one line.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

from ..memory import Memory
from ._server import database_url
from ._settings import load_settings

T = TypeVar("T")


def with_memory(work: Callable[[Memory], Awaitable[T]]) -> T:
    """Open the configured memory (embedder matching the database), run ``work``, close."""
    settings = load_settings()
    database_url(settings)  # starts the embedded server, saying so

    async def run() -> T:
        async with await Memory.open(settings, run_worker=False) as memory:
            return await work(memory)

    return asyncio.run(run())
