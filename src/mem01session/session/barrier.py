"""What a run waits for, and for how long its memory work may hold it.

**A run waits for no extraction.** A recall for a run finds, in the same snapshot as its
records, which of the user's turns are still queued for extraction. Those the model reads
anyway (this conversation's, in its transcript) need nothing. For the others (a turn said
a moment ago in another conversation, or one a trimming session dropped from view), the
same statement reads the user's words in the newest :data:`SAID_TURNS` of them, and the
block quotes those words after everything else, as the newest thing the user said
(:mod:`..engine.frame`). So a run never waits for a worker: not for a backlog, not for a
slow extractor, not for a turn being extracted now. What the words do not cover (more
queued turns than that, or words that do not fit the budget) is counted in the block's
header, and the result is ``stale``. An explicit ``Mem01Session.recall`` and
``flush_memory`` keep the full barrier: they wait for every queued turn, bounded.

**The budget of a run.** Everything memory does for a run (sending held turns, the read)
happens within :func:`budget` seconds: ``recall_wait``, or :data:`MIN_BUDGET_SECONDS` if
that is longer (a read on a healthy database takes milliseconds). The budget starts once
the memory is open: opening it (the database, the worker, the embedding model and the
tokenizer: seconds on a slow machine) is paid once per process, by its first run unless
``Memory.ready`` was awaited at start-up, and a first run that paid it still recalls. A
database restart, a reconnection or a wait for a pooled connection that would hold the
run longer is abandoned there: the run answers without memory, and ``last_memory_error``
says what it was doing. The storing of a turn after the answer has the same budget; a
turn that could not be stored within it stays with the session and is sent with the next
one.

**A flush's bound.** ``flush_memory(timeout)`` and closing a session return within their
timeout whatever the database does (a lock held elsewhere, a server that stopped
answering): the whole operation is bounded, not only the wait for extraction. That wait
ends :func:`read_reserve` seconds early, so that the read after it (which jobs finished,
which failed) fits in the timeout too.
"""

from __future__ import annotations

import dataclasses
import time

from ..engine import BeliefEngine
from ..engine.records import RecallRequest, RecallResult

# The queued turns of the user whose words a run's block quotes (the newest).
SAID_TURNS = 3
# However short ``recall_wait`` is, a run's memory work may take this long.
MIN_BUDGET_SECONDS = 0.5
# A flush keeps at most this much of its timeout for the read after its wait.
READ_RESERVE_SECONDS = 1.0


def budget(recall_wait: float) -> float:
    """Seconds a run's memory work may take (see the module docstring)."""
    return max(recall_wait, MIN_BUDGET_SECONDS)


def read_reserve(timeout: float) -> float:
    """Seconds of a flush's ``timeout`` kept for its read after the wait for extraction:
    a tenth, at most :data:`READ_RESERVE_SECONDS`."""
    return min(timeout / 10, READ_RESERVE_SECONDS)


def wait_end(timeout: float | None) -> float | None:
    """When a flush of ``timeout`` seconds starting now stops waiting for extraction
    (``time.monotonic``; None: never), leaving the read after the wait its
    :func:`read_reserve`."""
    if timeout is None:
        return None
    return time.monotonic() + timeout - read_reserve(timeout)


def noted(
    engine: BeliefEngine,
    result: RecallResult,
    request: RecallRequest,
    pending: int,
    said: tuple[str, ...] = (),
) -> RecallResult:
    """``result`` with ``pending`` turns of the user still queued said in its block, and
    the words of the newest of them (``said``, newest first) quoted."""
    if not pending:
        return result
    return engine.reframe(
        result, dataclasses.replace(request, pending_turns=pending, pending_said=said)
    )


def still_queued(timeout: float | None, run_worker: bool) -> str:
    """What a flush that ran out of time says: not a failure, the turns stay queued."""
    waited = "" if timeout is None else f" after {timeout:g} s"
    elsewhere = (
        ""
        if run_worker
        else "; this process runs no worker (run_worker=False): is a "
        "`mem01session worker` running on this database?"
    )
    return (
        f"flush timed out{waited}: turns of this user are still waiting for "
        f"extraction (they stay queued and are applied later){elsewhere}"
    )


__all__ = [
    "MIN_BUDGET_SECONDS",
    "READ_RESERVE_SECONDS",
    "SAID_TURNS",
    "budget",
    "noted",
    "read_reserve",
    "still_queued",
    "wait_end",
]
