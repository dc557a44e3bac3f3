"""The durable outbox: one row per turn waiting for extraction.

A job is claimed under a lease (``FOR UPDATE SKIP LOCKED``), processed, and marked done
*inside the transaction that applies its ops* (:func:`complete_hook`), so a retry after
a crash can never apply a turn twice. Jobs of one user are processed in order: only the
oldest unfinished job of a user can be claimed.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from .db import Database
from .engine import TransactionHook
from .errors import Mem01Error
from .extraction.base import Turn, TurnMessage
from .extraction.hygiene import redact_secrets
from .records import JobProgress
from .redaction import redact


class JobLostError(Mem01Error):
    """The job is no longer leased by this worker (erased, or reclaimed after its lease)."""


@dataclass(frozen=True)
class Job:
    """One outbox row."""

    id: int
    user_id: str
    session_id: str
    payload: dict[str, Any]
    status: str
    attempts: int
    last_error: str | None
    created_at: datetime
    updated_at: datetime
    lease_owner: str | None = None
    usage: dict[str, Any] | None = None

    def turn(self) -> Turn:
        """The turn stored in the payload."""
        messages = tuple(
            TurnMessage(role=m["role"], text=m["text"], item_ref=m.get("item_ref"))
            for m in self.payload.get("messages", [])
        )
        observed = datetime.fromisoformat(self.payload["observed_at"])
        return Turn(session_id=self.session_id, messages=messages, observed_at=observed)


_COLUMNS = (
    "id, user_id, session_id, payload, status, attempts, last_error, created_at, "
    "updated_at, lease_owner, usage"
)


def _job(row: Mapping[Any, Any]) -> Job:
    return Job(**{k: row[k] for k in _COLUMNS.split(", ")})


def scrub(text: str) -> str:
    """``text`` without secrets: registered ones (DSN password, API key) and anything the
    extraction hygiene recognizes (keys, tokens, passwords, card numbers). A job row keeps
    the turn until the user is erased, so a secret said in a conversation must not reach
    it; the extractor never needed it either (hygiene would drop or redact it)."""
    return redact_secrets(redact(text))[0]


def payload_for(messages: Sequence[TurnMessage], observed_at: datetime) -> dict[str, Any]:
    return {
        "messages": [
            {"role": m.role, "text": scrub(m.text), "item_ref": m.item_ref} for m in messages
        ],
        "observed_at": observed_at.isoformat(),
    }


async def enqueue(
    db: Database,
    user_id: str,
    session_id: str,
    messages: Sequence[TurnMessage],
    *,
    now: datetime,
    idempotency_key: str | None = None,
) -> int:
    """Record a turn for extraction; returns the job id (the existing one for a known key).

    One autocommit statement: the insert, or the id of the job already holding the key."""
    key = idempotency_key or uuid.uuid4().hex
    params = {
        "u": user_id,
        "s": session_id,
        "p": json.dumps(payload_for(messages, now)),
        "k": key,
        "now": now,
    }
    rows = await db.direct.fetch(_ENQUEUE, params)
    if not rows:  # the key's job was committed after this statement's snapshot
        rows = await db.direct.fetch(_JOB_BY_KEY, params)
    return int(rows[0]["id"])


_ENQUEUE = """
WITH ins AS (
  INSERT INTO memory_jobs (user_id, session_id, payload, idempotency_key, run_after,
                           created_at, updated_at)
  VALUES (%(u)s, %(s)s, CAST(%(p)s AS jsonb), %(k)s, %(now)s, %(now)s, %(now)s)
  ON CONFLICT (user_id, idempotency_key) DO NOTHING RETURNING id
)
SELECT id FROM ins
UNION ALL
SELECT id FROM memory_jobs WHERE user_id = %(u)s AND idempotency_key = %(k)s"""
_JOB_BY_KEY = "SELECT id FROM memory_jobs WHERE user_id = %(u)s AND idempotency_key = %(k)s"


async def claim(
    engine: AsyncEngine, worker_id: str, *, now: datetime, lease: timedelta, limit: int = 1
) -> list[Job]:
    """Lease up to ``limit`` jobs, each the oldest unfinished job of its user.

    Pending jobs whose backoff has passed and running jobs whose lease expired (their
    worker died) are both claimable.
    """
    async with engine.begin() as conn:
        rows = (
            await conn.execute(
                text(
                    f"""
                    WITH next AS (
                        SELECT j.user_id, j.id FROM memory_jobs j
                        WHERE ((j.status = 'pending' AND j.run_after <= :now)
                               OR (j.status = 'running' AND j.lease_until < :now))
                          AND NOT EXISTS (
                              SELECT 1 FROM memory_jobs e
                              WHERE e.user_id = j.user_id AND e.id < j.id
                                AND e.status IN ('pending', 'running'))
                        ORDER BY j.id
                        LIMIT :limit
                        FOR UPDATE SKIP LOCKED
                    )
                    UPDATE memory_jobs m
                    SET status = 'running', lease_owner = :w, lease_until = :until,
                        attempts = m.attempts + 1, updated_at = :now
                    FROM next
                    WHERE m.user_id = next.user_id AND m.id = next.id
                    RETURNING {", ".join("m." + c for c in _COLUMNS.split(", "))}
                    """
                ),
                {"now": now, "w": worker_id, "until": now + lease, "limit": limit},
            )
        ).mappings()
        return [_job(r) for r in rows]


def complete_hook(
    job: Job, worker_id: str, *, now: datetime, usage: Mapping[str, int]
) -> TransactionHook:
    """A hook that marks ``job`` done inside the apply transaction, or aborts it."""

    async def hook(conn: AsyncConnection) -> None:
        await _mark_done(conn, job, worker_id, now=now, usage=usage)

    return hook


async def _mark_done(
    conn: AsyncConnection, job: Job, worker_id: str, *, now: datetime, usage: Mapping[str, int]
) -> None:
    row = (
        await conn.execute(
            text(
                "UPDATE memory_jobs SET status = 'done', lease_owner = NULL, lease_until = NULL, "
                "last_error = NULL, usage = CAST(:usage AS jsonb), updated_at = :now "
                "WHERE user_id = :u AND id = :id AND status = 'running' AND lease_owner = :w "
                "RETURNING id"
            ),
            {
                "u": job.user_id,
                "id": job.id,
                "w": worker_id,
                "now": now,
                "usage": json.dumps(dict(usage)) if usage else None,
            },
        )
    ).first()
    if row is None:
        raise JobLostError(f"job {job.id} is no longer leased by this worker")


async def complete_without_ops(
    engine: AsyncEngine, job: Job, worker_id: str, *, now: datetime, usage: Mapping[str, int]
) -> None:
    """Mark a job that produced no ops done."""
    async with engine.begin() as conn:
        await _mark_done(conn, job, worker_id, now=now, usage=usage)


async def fail(
    engine: AsyncEngine,
    job: Job,
    worker_id: str,
    error: str,
    *,
    now: datetime,
    retry_at: datetime | None,
) -> None:
    """Record a failure: back to pending until ``retry_at``, or ``failed`` when None."""
    async with engine.begin() as conn:
        await conn.execute(
            text(
                "UPDATE memory_jobs SET status = :status, last_error = :err, lease_owner = NULL, "
                "lease_until = NULL, run_after = COALESCE(:retry_at, run_after), updated_at = :now "
                "WHERE user_id = :u AND id = :id AND status = 'running' AND lease_owner = :w"
            ),
            {
                "status": "pending" if retry_at is not None else "failed",
                "err": error[:2000],
                "retry_at": retry_at,
                "now": now,
                "u": job.user_id,
                "id": job.id,
                "w": worker_id,
            },
        )


async def progress(db: Database, user_id: str, watch: Sequence[int]) -> JobProgress:
    """In one round trip: the user's unfinished jobs, and the state of those in ``watch``."""
    rows = await db.direct.fetch(
        "SELECT id, status, last_error FROM memory_jobs WHERE user_id = %(u)s "
        "AND (status IN ('pending', 'running') OR id = ANY(%(watch)s))",
        {"u": user_id, "watch": list(watch)},
    )
    return JobProgress.from_rows(((r["id"], r["status"], r["last_error"]) for r in rows), watch)


async def statuses(engine: AsyncEngine, user_id: str, ids: Sequence[int]) -> dict[int, Job]:
    """The user's jobs among ``ids`` (erased or unknown ids are absent)."""
    if not ids:
        return {}
    async with engine.connect() as conn:
        rows = (
            await conn.execute(
                text(f"SELECT {_COLUMNS} FROM memory_jobs WHERE user_id = :u AND id = ANY(:ids)"),
                {"u": user_id, "ids": list(ids)},
            )
        ).mappings()
        return {int(r["id"]): _job(r) for r in rows}


async def list_jobs(
    engine: AsyncEngine,
    *,
    user_id: str | None = None,
    status: str | None = None,
    limit: int = 100,
) -> list[Job]:
    """Jobs, newest first, optionally for one user or one status."""
    clauses = []
    params: dict[str, Any] = {"limit": limit}
    if user_id is not None:
        clauses.append("user_id = :u")
        params["u"] = user_id
    if status is not None:
        clauses.append("status = :status")
        params["status"] = status
    where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
    async with engine.connect() as conn:
        rows = (
            await conn.execute(
                text(f"SELECT {_COLUMNS} FROM memory_jobs {where} ORDER BY id DESC LIMIT :limit"),
                params,
            )
        ).mappings()
        return [_job(r) for r in rows]


async def retry(engine: AsyncEngine, job_id: int, *, now: datetime) -> Job | None:
    """Send a failed job back to the queue; None if no failed job has that id."""
    async with engine.begin() as conn:
        row = (
            (
                await conn.execute(
                    text(
                        "UPDATE memory_jobs SET status = 'pending', attempts = 0, "
                        "run_after = :now, updated_at = :now "
                        f"WHERE id = :id AND status = 'failed' RETURNING {_COLUMNS}"
                    ),
                    {"id": job_id, "now": now},
                )
            )
            .mappings()
            .first()
        )
        return _job(row) if row else None
