"""The job table: one row per turn waiting for extraction. :class:`JobStore` holds every
statement on ``memory_jobs`` but the listing, which it shares with the read-only CLI
commands (:func:`.job_records.list_jobs`).

A job is claimed under a lease (``FOR UPDATE SKIP LOCKED``, one user at a time: see
:mod:`.claim`), processed, and marked done *inside the transaction that applies its ops*
(:meth:`JobStore.done_hook`), so a retry after a crash can never apply a turn twice. Jobs
of one user are processed in order: only the oldest unfinished job of a user can be
claimed.

Statements elsewhere read or touch the table, through documented interfaces: what is left
of a user's queue, as the conversations read it (:mod:`.progress`: the engine's recall
runs its probe in its own snapshot, so a barrier that finds nothing pending costs no extra
round trip), a worker's renewal of the leases it holds (:mod:`.heartbeat`), and erasing a
user deletes their rows from every user-scoped table of the schema, this one included.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta

from sqlalchemy import text

from ..checks import check_filter
from ..db import Database
from ..engine.group import GroupHook
from ..engine.tx import Tx, transaction
from ..engine.write import TransactionHook, TxHook
from ..errors import UserErasedError
from ..extraction.base import TurnMessage
from ..logs import describe, get_logger
from ..secrets.redaction import redact
from .carried_vectors import KEY as CARRIED
from .carried_vectors import Known, carry
from .claim import claim_jobs, claim_many_statement, claim_statement
from .completion import JobLostError, mark_done, mark_done_many, mark_failed
from .job_records import (
    EPOCH,
    JOB_COLUMNS,
    REFUSED,
    Job,
    JobCounts,
    job_from_row,
    list_jobs,
    payload_for,
    prior_answer,
)
from .notify import CHANNEL, NOTIFY

log = get_logger(__name__)

# Nothing is stored for a user whose memory was erased (a tombstone in memory_users).
_ERASED = "SELECT 1 FROM memory_users WHERE user_id = %(u)s AND erased_at IS NOT NULL"
# A plain VALUES insert: its id comes from the sequence where the statement is planned
# (on a cluster, the coordinator), so a user's job ids grow in the order the jobs came,
# whichever worker holds the user's shard. (An INSERT ... SELECT would be run on that
# worker and take an id from the worker's own range, which a shard move can reorder.)
_ENQUEUE = """
INSERT INTO memory_jobs (user_id, session_id, payload, idempotency_key, run_after,
                         created_at, updated_at)
VALUES (%(u)s, %(s)s, CAST(%(p)s AS jsonb), %(k)s, %(now)s, %(now)s, %(now)s)
ON CONFLICT (user_id, idempotency_key) DO NOTHING RETURNING id"""
# The erased check, the insert and (when asked) the notification in one statement, for one
# server: a run's turn costs one round trip. (On a cluster the insert must be the plain
# VALUES one above, so the check and the notification go apart.)
_ENQUEUE_CHECKED = f"""
WITH erased AS (
    SELECT 1 FROM memory_users WHERE user_id = %(u)s AND erased_at IS NOT NULL
), ins AS (
    INSERT INTO memory_jobs (user_id, session_id, payload, idempotency_key, run_after,
                             created_at, updated_at)
    SELECT %(u)s, %(s)s, CAST(%(p)s AS jsonb), %(k)s, %(now)s, %(now)s, %(now)s
    WHERE NOT EXISTS (SELECT 1 FROM erased)
    ON CONFLICT (user_id, idempotency_key) DO NOTHING RETURNING id
)
SELECT (SELECT id FROM ins) AS id, EXISTS (SELECT 1 FROM erased) AS erased,
       CASE WHEN %(notify)s AND EXISTS (SELECT 1 FROM ins)
            THEN pg_notify('{CHANNEL}', '') END AS notified"""
_JOB_BY_KEY = "SELECT id FROM memory_jobs WHERE user_id = %(u)s AND idempotency_key = %(k)s"
# A turn that could not be stored: its outcome, without its text.
_REFUSED = """
INSERT INTO memory_jobs (user_id, session_id, payload, idempotency_key, status, last_error,
                         run_after, created_at, updated_at)
VALUES (%(u)s, %(s)s, CAST(%(p)s AS jsonb), %(k)s, 'failed', %(err)s, %(now)s, %(now)s, %(now)s)
ON CONFLICT (user_id, idempotency_key) DO UPDATE SET updated_at = EXCLUDED.updated_at
RETURNING id"""
# One user's claim names the user (on a cluster, a statement on that user's shard alone).
_CLAIM = (
    claim_statement(JOB_COLUMNS, prior_answer("%(u)s")),
    claim_many_statement(JOB_COLUMNS, prior_answer("m.user_id")),
)


_SELECT_JOBS = f"SELECT {JOB_COLUMNS} FROM memory_jobs"


class JobStore:
    """Every statement on the job table (see the module docstring)."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def __repr__(self) -> str:
        return f"JobStore({self.db!r})"

    # -- producers ---------------------------------------------------------------------

    async def enqueue(
        self,
        user_id: str,
        session_id: str,
        messages: Sequence[TurnMessage],
        *,
        now: datetime,
        idempotency_key: str | None = None,
        known: Known | None = None,
        model: str = "",
        notify: bool = False,
    ) -> int:
        """Record a turn for extraction; returns the job id (the existing one for a known
        key). One autocommit statement on one server (is the user erased? the insert); on a
        cluster two (a third reads the id of the job already holding the key). ``known``:
        the vectors ``model`` made of the user's words that the turn carries to the worker
        (:mod:`.carried`). ``notify``: wake the workers listening elsewhere
        (:mod:`.notify`) once the new job is stored.

        Raises :class:`UserErasedError` (storing nothing) for an erased user. An erase
        that commits while the turn is being stored does not see this job; the worker then
        refuses it and drops its text, as for any job of an erased user.
        """
        key = idempotency_key or uuid.uuid4().hex
        payload = payload_for(messages, now)
        if known is not None:
            # Looked up by the scrubbed text: a text that lost a secret is not what was embedded.
            said = [m["text"] for m in payload["messages"] if m["role"] == "user"]
            entry = carry(said, known, model)
            if entry is not None:
                payload[CARRIED] = entry
        params = {
            "u": user_id,
            "s": session_id,
            "p": json.dumps(payload),
            "k": key,
            "now": now,
            "notify": notify,
        }
        pool = self.db.direct
        if pool.distributed is False:
            [row] = await pool.fetch(_ENQUEUE_CHECKED, params)
            if row["erased"]:
                raise _erased()
            rows = [row] if row["id"] is not None else []
        else:
            if await pool.fetch(_ERASED, params):
                raise _erased()
            rows = await pool.fetch(_ENQUEUE, params)
            if rows and notify:
                try:
                    await pool.fetch(NOTIFY, {})
                except Exception as exc:  # the turn is stored: the workers' poll finds it
                    log.debug("jobs: could not notify the workers: %s", describe(exc))
        if not rows:  # a job already holds the key
            rows = await pool.fetch(_JOB_BY_KEY, params)
        if not rows:  # ... and was deleted since: the user was erased meanwhile
            raise _erased()
        return int(rows[0]["id"])

    async def holds_key(self, user_id: str, key: str) -> bool:
        """Whether a job of ``user_id`` holds the idempotency ``key``."""
        rows = await self.db.direct.fetch(_JOB_BY_KEY, {"u": user_id, "k": key})
        return bool(rows)

    async def record_refused(
        self, user_id: str, session_id: str, reason: str, *, now: datetime, idempotency_key: str
    ) -> int:
        """Record, as a failed job without the turn's text, a turn that could not be
        enqueued for a reason other than the connection (so ``jobs list --failed`` and the
        session's flush say so); returns its id."""
        payload = {"messages": [], "observed_at": now.isoformat(), REFUSED: True}
        rows = await self.db.direct.fetch(
            _REFUSED,
            {
                "u": user_id,
                "s": session_id,
                "p": json.dumps(payload),
                "k": idempotency_key,
                "err": redact(reason)[:2000],
                "now": now,
            },
        )
        return int(rows[0]["id"])

    # -- the worker --------------------------------------------------------------------

    async def claim(
        self, worker_id: str, *, now: datetime, lease: timedelta, limit: int = 1
    ) -> list[Job]:
        """Lease up to ``limit`` jobs, each the oldest unfinished job of its user.

        Pending jobs whose backoff has passed and running jobs whose lease expired (their
        worker died) are both claimable. One user at a time (:mod:`.claim` says why).
        Each comes with :attr:`Job.prior_answer`.
        """
        return await claim_jobs(
            self.db.direct,
            _CLAIM,
            job_from_row,
            worker_id=worker_id,
            now=now,
            lease=lease,
            limit=limit,
        )

    def done_hook(
        self,
        job: Job,
        worker_id: str,
        *,
        now: datetime,
        usage: Mapping[str, int],
        notes: Sequence[str] = (),
    ) -> TransactionHook:
        """A hook for the engine's apply transaction: marks ``job`` done, or aborts the
        batch with :class:`JobLostError` when the job is no longer this worker's."""

        async def hook(tx: Tx) -> None:
            await mark_done(tx, job, worker_id, now=now, usage=usage, notes=notes)

        return TxHook(hook)

    def done_many_hook(
        self,
        done: Sequence[tuple[Job, Mapping[str, int], Sequence[str]]],
        worker_id: str,
        *,
        now: datetime,
    ) -> GroupHook:
        """:meth:`done_hook` for a group of jobs, each ``(job, usage, notes)``: one statement;
        :class:`JobLostError` (the group rolls back) if one is no longer this worker's."""

        async def hook(tx: Tx) -> None:
            await mark_done_many(tx, done, worker_id, now=now)

        return hook

    async def complete_without_ops(
        self,
        job: Job,
        worker_id: str,
        *,
        now: datetime,
        usage: Mapping[str, int],
        notes: Sequence[str] = (),
    ) -> None:
        """Mark a job that produced no ops done."""
        await transaction(
            self.db.direct,
            lambda tx: mark_done(tx, job, worker_id, now=now, usage=usage, notes=notes),
        )

    async def fail(
        self,
        job: Job,
        worker_id: str,
        error: str,
        *,
        now: datetime,
        retry_at: datetime | None,
        forget_text: bool = False,
        counted: bool = True,
    ) -> None:
        """Record a failure: back to pending until ``retry_at``, or ``failed`` when None.
        With ``forget_text`` the turn's text leaves the row (the user was erased); without
        ``counted`` the attempt is given back (the database, not the turn, failed it)."""
        await transaction(
            self.db.direct,
            lambda tx: mark_failed(
                tx, job, worker_id, error, now, retry_at, forget_text, counted=counted
            ),
        )

    def fail_hook(self, job: Job, worker_id: str, error: str, *, now: datetime) -> TransactionHook:
        """A hook for the engine's apply transaction: marks ``job`` failed for good (the
        transaction keeps the turn's words as episodes), or aborts with
        :class:`JobLostError` when the job is no longer this worker's."""

        async def hook(tx: Tx) -> None:
            if not await mark_failed(tx, job, worker_id, error, now, None, False):
                raise JobLostError(f"job {job.id} is no longer leased by this worker")

        return TxHook(hook)

    async def release(self, worker_id: str, *, now: datetime) -> list[int]:
        """Hand back every job ``worker_id`` holds (it is stopping): pending again, at once,
        the interrupted attempt not counted. Returns their ids."""
        rows = await self.db.direct.fetch(
            "UPDATE memory_jobs SET status = 'pending', lease_owner = NULL, lease_until = NULL, "
            "attempts = greatest(attempts - 1, 0), run_after = %(now)s, updated_at = %(now)s "
            "WHERE status = 'running' AND lease_owner = %(w)s RETURNING id",
            {"w": worker_id, "now": now},
        )
        return sorted(int(r["id"]) for r in rows)

    async def running_owners(self) -> list[str]:
        """The worker ids holding a claim now."""
        rows = await self.db.direct.fetch(
            "SELECT DISTINCT lease_owner FROM memory_jobs "
            "WHERE status = 'running' AND lease_owner IS NOT NULL",
            {},
        )
        return [str(r["lease_owner"]) for r in rows]

    async def take_back(self, owners: Sequence[str], *, now: datetime) -> list[int]:
        """Jobs claimed by ``owners`` (workers whose process is gone) pending again, at
        once; the attempt that process made stays counted. Returns their ids."""
        if not owners:
            return []
        rows = await self.db.direct.fetch(
            "UPDATE memory_jobs SET status = 'pending', lease_owner = NULL, lease_until = NULL, "
            "run_after = %(now)s, updated_at = %(now)s "
            "WHERE status = 'running' AND lease_owner = ANY(%(owners)s) RETURNING id",
            {"owners": list(owners), "now": now},
        )
        return sorted(int(r["id"]) for r in rows)

    async def statuses(self, user_id: str, ids: Sequence[int]) -> dict[int, Job]:
        """The user's jobs among ``ids`` (erased or unknown ids are absent)."""
        if not ids:
            return {}
        async with self.db.sa_engine.connect() as conn:
            rows = (
                await conn.execute(
                    text(f"{_SELECT_JOBS} WHERE user_id = :u AND id = ANY(:ids)"),
                    {"u": user_id, "ids": list(ids)},
                )
            ).mappings()
            return {int(r["id"]): job_from_row(r) for r in rows}

    # -- inspection --------------------------------------------------------------------

    async def list_jobs(
        self, *, user_id: str | None = None, status: str | None = None, limit: int = 100
    ) -> list[Job]:
        """Jobs, newest first, optionally for one user or one status
        (:func:`~.job_records.list_jobs`)."""
        return await list_jobs(self.db.direct, user_id=user_id, status=status, limit=limit)

    async def get(self, job_id: int) -> Job | None:
        """One job by id, of whichever user (the operator's tools look jobs up by id)."""
        async with self.db.sa_engine.connect() as conn:
            row = (
                (
                    await conn.execute(
                        text(f"SELECT {JOB_COLUMNS} FROM memory_jobs WHERE id = :id"),
                        {"id": job_id},
                    )
                )
                .mappings()
                .first()
            )
        return job_from_row(row) if row else None

    async def counts(self, user_id: str) -> JobCounts:
        """How many of the user's jobs are in each status."""
        async with self.db.sa_engine.connect() as conn:
            rows = (
                await conn.execute(
                    text(
                        "SELECT status, count(*) AS n, max(updated_at) AS last "
                        "FROM memory_jobs WHERE user_id = :u GROUP BY status"
                    ),
                    {"u": user_id},
                )
            ).all()
        return JobCounts(
            user_id,
            {str(r.status): int(r.n) for r in rows},
            max((r.last for r in rows), default=None),
        )

    async def open_by_user(self, *, contains: str | None = None) -> dict[str, JobCounts]:
        """Users with jobs pending, running or failed (only those counted), most recently
        changed first; with ``contains``, only user ids containing it (ignoring case).

        An inspector lists these users even before any of their turns was applied.
        """
        q = check_filter("contains", contains)
        where = "AND strpos(lower(user_id), lower(:q)) > 0 " if q is not None else ""
        async with self.db.sa_engine.connect() as conn:
            rows = (
                await conn.execute(
                    text(
                        "SELECT user_id, status, count(*) AS n, max(updated_at) AS last "
                        "FROM memory_jobs WHERE status IN ('pending', 'running', 'failed') "
                        f"{where}GROUP BY user_id, status"
                    ),
                    {"q": q},
                )
            ).all()
        out: dict[str, JobCounts] = {}
        for r in rows:
            prev = out.get(r.user_id) or JobCounts(str(r.user_id), {}, None)
            last = r.last if prev.updated_at is None else max(prev.updated_at, r.last)
            out[r.user_id] = JobCounts(prev.user_id, prev.counts | {r.status: int(r.n)}, last)
        return dict(sorted(out.items(), key=lambda kv: kv[1].updated_at or EPOCH, reverse=True))

    async def retry(self, job_id: int, *, now: datetime, user_id: str | None = None) -> Job | None:
        """Send a failed job back to the queue; None if no failed job has that id (among
        ``user_id``'s jobs, when given), if it records a turn that was never stored, or if
        its user was erased."""
        scope = "" if user_id is None else "AND j.user_id = :u "
        async with self.db.sa_engine.begin() as conn:
            row = (
                (
                    await conn.execute(
                        text(
                            "UPDATE memory_jobs j SET status = 'pending', attempts = 0, "
                            "run_after = :now, updated_at = :now "
                            "WHERE j.id = :id AND j.status = 'failed' "
                            f"{scope}AND NOT (j.payload ? '{REFUSED}') AND NOT EXISTS ("
                            "  SELECT 1 FROM memory_users u "
                            "  WHERE u.user_id = j.user_id AND u.erased_at IS NOT NULL) "
                            f"RETURNING {JOB_COLUMNS}"
                        ),
                        {"id": job_id, "now": now, "u": user_id},
                    )
                )
                .mappings()
                .first()
            )
            return job_from_row(row) if row else None


def _erased() -> UserErasedError:
    return UserErasedError(
        "this user's memory was erased; the turn was not stored "
        "(reinstate the user to remember new turns)"
    )
