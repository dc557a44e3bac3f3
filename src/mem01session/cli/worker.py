"""``mem01session worker``: extraction in a process of its own."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from ._errors import fail

if TYPE_CHECKING:
    from ..config import Settings
    from ..memory import Memory


def worker(
    concurrency: Annotated[
        int | None,
        typer.Option(
            "--concurrency",
            help="Users' turns extracted at once (1-64; default: 8 with a model, "
            "64 with the offline rules).",
        ),
    ] = None,
    poll_interval: Annotated[
        float,
        typer.Option(
            "--poll-interval",
            help="Seconds between looks at the queue when no process says a turn was queued.",
        ),
    ] = 1.0,
) -> None:
    """Extract and apply queued turns until stopped (Ctrl+C or SIGTERM).

    For applications that open Memory(run_worker=False): their processes only record
    turns, and this process (or several: they share the queue, each user's turns still in
    order) extracts them, with the extractor and embedder the environment configures, as
    the application's own worker would. It listens for the turns they queue and takes
    them at once. Stopping hands back the turns it had taken, for the next worker.

    Example: MEM01_DATABASE_URL=postgresql://... mem01session worker
    """
    if concurrency is not None and not 1 <= concurrency <= 64:
        fail(f"--concurrency must be between 1 and 64, got {concurrency}")
    if not 0.05 <= poll_interval <= 3600:
        fail(f"--poll-interval must be between 0.05 and 3600 seconds, got {poll_interval:g}")
    import asyncio

    from ._settings import load_settings

    settings = load_settings()
    _dated_logs()
    asyncio.run(_serve(settings, concurrency, poll_interval))


LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def _dated_logs() -> None:
    """The worker's warnings (a failed job, an outage) as a service's log lines: dated and
    named, on standard error (Python's fallback printed the bare message). An application
    that set up logging keeps its own."""
    import logging

    if not logging.getLogger().handlers:
        logging.basicConfig(format=LOG_FORMAT, level=logging.WARNING)


async def _serve(settings: Settings, concurrency: int | None, poll_interval: float) -> None:
    import asyncio
    import signal

    from ..memory import Memory, WorkerPolicy

    policy = WorkerPolicy(concurrency=concurrency, poll_interval=poll_interval, listen=True)
    memory = Memory(settings, worker_policy=policy)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        running = await memory.worker()
        typer.echo(  # one line each, unwrapped, flushed: these go to logs
            f"worker {running.worker_id}: extracting with {running.extractor.name} on "
            f"{_where(memory)}; Ctrl+C stops it"
        )
        await stop.wait()
        released = await running.stop()
    finally:
        await memory.aclose()
    typer.echo(f"stopped: {running.processed} turn(s) processed, {len(released)} handed back")


def _where(memory: Memory) -> str:
    from ..secrets.redaction import redact_dsn

    url = memory.settings.database_url
    return redact_dsn(url) if url else f"the embedded server in {memory.settings.home}"
