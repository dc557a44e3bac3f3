"""What a run waits for, and for how long its memory work may hold it.

**The barrier of a run.** A recall for a run finds, in the same snapshot, which of the
user's turns are still queued for extraction. Those the model reads anyway (this
conversation's, in its transcript) are never waited for. For the others (another
conversation's last turn, say), waiting pays off only when the wait is short: a run waits,
at most ``recall_wait``, only for a turn that is *next*:

* it is the only such turn (several mean several extractions in a row: the queue is
  behind), and it is the user's oldest unfinished turn (nothing of the user is ahead of it);
* a worker is extracting it now, or takes it within :data:`CLAIM_GRACE_SECONDS` of being
  asked (a turn no worker takes at once is queued behind other users' turns);
* this conversation has not given up on it before: a wait that ran out is not repeated by
  the conversation's later runs (each queued turn costs a conversation one wait at most).

Whatever is not waited for is said in the block's header (``pending_turns``), so the model
knows that newer words of the user may not be in the notes. An explicit
``Mem01Session.recall`` and ``flush_memory`` keep the full barrier.

**The budget of a run.** Everything memory does for a run (opening the memory on first
use, sending held turns, the reads, the wait) happens within :func:`budget` seconds of its
start: ``recall_wait``, or :data:`MIN_BUDGET_SECONDS` if that is longer (a read on a
healthy database takes milliseconds). A database restart, a reconnection or a wait for a
pooled connection that would hold the run longer is abandoned there: the run answers with
what was read before (marked stale), or without memory, and ``last_memory_error`` says
what it was doing. The storing of a turn after the answer has the same budget; a turn that
could not be stored within it stays with the session and is sent with the next one.
"""

from __future__ import annotations

from collections.abc import Set

from ..queue import JobStore, MemoryWorker

# A queued turn of another conversation is waited for only if a worker takes it within
# this long of being asked: a turn no worker takes at once is behind a backlog.
CLAIM_GRACE_SECONDS = 0.2
# However short ``recall_wait`` is, a run's memory work may take this long.
MIN_BUDGET_SECONDS = 0.5


def budget(recall_wait: float) -> float:
    """Seconds a run's memory work may take (see the module docstring)."""
    return max(recall_wait, MIN_BUDGET_SECONDS)


def worth_waiting(waiting: Set[int], unfinished: Set[int], given_up: Set[int]) -> frozenset[int]:
    """Which of ``waiting`` (queued turns the model does not read) a run waits for:
    the one turn that is next in the user's queue (``unfinished``: all the user's queued
    turns), unless this conversation gave up on it before; else none."""
    if len(waiting) != 1 or waiting <= given_up:
        return frozenset()
    (job,) = waiting
    return frozenset(waiting) if job == min(unfinished) else frozenset()


async def wait_for_next(
    worker: MemoryWorker,
    jobs: JobStore,
    user_id: str,
    wanted: frozenset[int],
    running: Set[int],
    timeout: float,
) -> bool:
    """Wait at most ``timeout`` seconds for ``wanted`` to be extracted (True: done).
    A turn not yet taken by a worker gets :data:`CLAIM_GRACE_SECONDS` to be taken: if
    it is still queued then, the wait ends there (False)."""
    if wanted <= running:
        return await worker.wait_until_done(user_id, set(wanted), timeout)
    grace = min(CLAIM_GRACE_SECONDS, timeout)
    if await worker.wait_until_done(user_id, set(wanted), grace):
        return True
    progress = await jobs.progress(user_id, sorted(wanted))
    if not wanted & progress.unfinished:
        return True  # taken and finished meanwhile (or failed: reported elsewhere)
    if not wanted <= progress.running or timeout <= grace:
        return False  # still queued: the workers are behind
    return await worker.wait_until_done(user_id, set(wanted), timeout - grace)


__all__ = ["CLAIM_GRACE_SECONDS", "MIN_BUDGET_SECONDS", "budget", "wait_for_next", "worth_waiting"]
