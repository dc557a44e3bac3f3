"""The one read of the job table outside :mod:`mem01session.queue.jobs`: whose failed job
is this? ``jobs retry`` asks before sending a job back, to refuse an erased user's job.

Meant to move into ``JobStore`` (with the refusal inside ``JobStore.retry``'s statement)
when the queue package next changes; until then it lives here, read-only.
"""

from __future__ import annotations

from sqlalchemy import text

from ..db import Database


async def failed_job_owner(db: Database, job_id: int) -> str | None:
    """The user of failed job ``job_id``; None if there is no such failed job."""
    async with db.sa_engine.connect() as conn:
        owner: str | None = await conn.scalar(
            text("SELECT user_id FROM memory_jobs WHERE id = :id AND status = 'failed'"),
            {"id": job_id},
        )
    return owner
