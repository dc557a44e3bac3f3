"""How a job ends: done in the transaction that applies it, or failed (back to pending
for a retry, or parked), always only by the worker that holds its lease."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime

from ..engine.tx import Tx
from ..errors import Mem01Error
from .carried_vectors import KEY as CARRIED
from .job_records import REFUSED, Job


class JobLostError(Mem01Error):
    """The job is no longer leased by this worker (erased, or reclaimed after its lease)."""


async def mark_failed(
    tx: Tx,
    job: Job,
    worker_id: str,
    error: str,
    now: datetime,
    retry_at: datetime | None,
    forget_text: bool,
    *,
    counted: bool = True,
) -> bool:
    """Mark a failure in ``tx`` (see :meth:`~.jobs.JobStore.fail`); whether the job was
    this worker's to mark. Not ``counted``: the attempt is given back."""
    marked = await tx.row(
        (
            "UPDATE memory_jobs SET status = :status, last_error = :err, "
            "lease_owner = NULL, lease_until = NULL, attempts = attempts - :uncount, "
            # (no function over the column: Citus refuses those in UPDATEs)
            # The carried vectors go with the text: they were made of it.
            f"payload = CASE WHEN :forget THEN (payload - 'messages' - '{CARRIED}') || "
            "CAST(:forgotten AS jsonb) ELSE payload END, "
            "run_after = COALESCE(:retry_at, run_after), updated_at = :now "
            "WHERE user_id = :u AND id = :id AND status = 'running' AND lease_owner = :w "
            "AND attempts = :attempts RETURNING id"  # this attempt's failure, no later one's
        ),
        {
            "attempts": job.attempts,
            "uncount": 0 if counted else 1,
            "forget": forget_text,
            "forgotten": json.dumps({"messages": [], REFUSED: True}),
            "status": "pending" if retry_at is not None else "failed",
            "err": error[:2000],
            "retry_at": retry_at,
            "now": now,
            "u": job.user_id,
            "id": job.id,
            "w": worker_id,
        },
    )
    return marked is not None


async def mark_done(
    tx: Tx,
    job: Job,
    worker_id: str,
    *,
    now: datetime,
    usage: Mapping[str, int],
    notes: Sequence[str] = (),
) -> None:
    """Mark ``job`` done in ``tx`` (the transaction that applied it), with the model's
    ``usage`` and the ``notes`` on what its extraction left out; raises
    :class:`JobLostError` when it is no longer this worker's."""
    row = await tx.row(
        "UPDATE memory_jobs SET status = 'done', lease_owner = NULL, lease_until = NULL, "
        f"payload = payload - '{CARRIED}', last_error = NULL, usage = CAST(:usage AS jsonb), "
        "notes = :notes, updated_at = :now "
        "WHERE user_id = :u AND id = :id AND status = 'running' AND lease_owner = :w "
        "RETURNING id",
        {
            "u": job.user_id,
            "id": job.id,
            "w": worker_id,
            "now": now,
            "usage": json.dumps(dict(usage)) if usage else None,
            "notes": joined(notes),
        },
    )
    if row is None:
        raise JobLostError(f"job {job.id} is no longer leased by this worker")


async def mark_done_many(
    tx: Tx,
    done: Sequence[tuple[Job, Mapping[str, int], Sequence[str]]],
    worker_id: str,
    *,
    now: datetime,
) -> None:
    """:func:`mark_done` for a group of ``(job, usage, notes)``, in one statement."""
    rows = await tx.rows(
        "UPDATE memory_jobs m SET status = 'done', lease_owner = NULL, lease_until = NULL, "
        f"payload = m.payload - '{CARRIED}', last_error = NULL, "
        "usage = CAST(d.usage AS jsonb), notes = d.notes, updated_at = :now "
        "FROM unnest(CAST(:users AS text[]), CAST(:ids AS bigint[]), CAST(:usages AS text[]), "
        "CAST(:notes AS text[])) AS d(u, id, usage, notes) "
        "WHERE m.user_id = d.u AND m.id = d.id AND m.status = 'running' AND m.lease_owner = :w "
        "RETURNING m.id",
        {
            "users": [job.user_id for job, _, _ in done],
            "ids": [job.id for job, _, _ in done],
            "usages": [json.dumps(dict(usage)) if usage else None for _, usage, _ in done],
            "notes": [joined(notes) for _, _, notes in done],
            "w": worker_id,
            "now": now,
        },
    )
    marked = {int(r["id"]) for r in rows}
    lost = [job.id for job, _, _ in done if job.id not in marked]
    if lost:
        raise JobLostError(f"job(s) {', '.join(map(str, lost))} no longer leased by this worker")


def joined(notes: Sequence[str]) -> str | None:
    """A job's notes as its row keeps them: one per line; None for none."""
    return "\n".join(notes) if notes else None
