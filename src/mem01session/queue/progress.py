"""What is left of a user's queue, as the conversations read it: the user's unfinished jobs,
the state of the jobs a session watches, and (for a run) the user's words in the newest
queued turns.

A barrier reads it in one round trip (:func:`fetch_progress`); a run reads it inside its
recall, in the recall's own snapshot (:func:`progress_probe`, :func:`run_probe`), so a
run that finds nothing pending pays no extra round trip.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime

from ..db import Database
from ..engine.read import SnapshotProbe
from .job_records import JobProgress

_PROGRESS = (
    "SELECT id, status, last_error, "
    "(status = 'failed' AND updated_at >= %(since)s) AS failed_since "
    "FROM memory_jobs WHERE user_id = %(user_id)s "
    "AND (status IN ('pending', 'running') OR id = ANY(%(job_watch)s) "
    "     OR (status = 'failed' AND updated_at >= %(since)s))"
)
# The same rows, aggregated into one value, for the recall's snapshot.
_PROGRESS_PROBE = (
    "SELECT coalesce(json_agg(json_build_array(j.id, j.status, j.last_error)), '[]') "
    "FROM memory_jobs j WHERE j.user_id = %(user_id)s "
    "AND (j.status IN ('pending', 'running') OR j.id = ANY(%(job_watch)s))"
)
# A run's: those rows, and the user's words in the newest queued turns it does not read
# (each cut to SAID_CHARS: the block quotes less), newest first.
SAID_CHARS = 1000
_RUN_PROBE = f"""SELECT json_build_array(({_PROGRESS_PROBE}), (
  SELECT coalesce(json_agg(w.said ORDER BY w.id DESC), '[]') FROM (
    SELECT j.id, (SELECT string_agg(left(m.value ->> 'text', {SAID_CHARS}), ' ')
                  FROM jsonb_array_elements(j.payload -> 'messages') m
                  WHERE m.value ->> 'role' = 'user') AS said
    FROM memory_jobs j
    WHERE j.user_id = %(user_id)s AND j.status IN ('pending', 'running')
      AND NOT j.id = ANY(%(job_read)s)
    ORDER BY j.id DESC LIMIT %(said_turns)s) w
  WHERE w.said <> ''))"""


async def fetch_progress(
    db: Database, user_id: str, watch: Sequence[int], *, failed_since: datetime | None = None
) -> JobProgress:
    """In one round trip: the user's unfinished jobs, the state of those in ``watch``,
    and (with ``failed_since``) the user's jobs that failed since then."""
    params = {"user_id": user_id, "job_watch": list(watch), "since": failed_since}
    rows = await db.direct.fetch(_PROGRESS, params)
    return JobProgress.from_rows(
        ((r["id"], r["status"], r["last_error"], r["failed_since"]) for r in rows), watch
    )


def progress_probe(watch: Sequence[int]) -> SnapshotProbe[JobProgress]:
    """:func:`fetch_progress` as a probe the engine's recall reads in its own snapshot."""
    watched = list(watch)
    return SnapshotProbe(
        _PROGRESS_PROBE,
        {"job_watch": watched},
        lambda value: JobProgress.from_rows(value, watched),
    )


def run_probe(
    watch: Sequence[int], read: Collection[int], said_turns: int
) -> SnapshotProbe[JobProgress]:
    """:func:`progress_probe` for a run: also the user's words (``JobProgress.said``) in
    the ``said_turns`` newest queued turns, but those of ``read`` (the model reads them in
    its transcript)."""
    watched = list(watch)
    return SnapshotProbe(
        _RUN_PROBE,
        {"job_watch": watched, "job_read": sorted(read), "said_turns": said_turns},
        lambda value: JobProgress.from_rows(value[0], watched, said=value[1]),
    )
