"""What a job row is: the job, a user's progress through the queue, counts per status, and
the payload a turn is stored as (scrubbed of secrets); and the job listing
(:func:`list_jobs`), a plain read on a direct pool that :class:`~.jobs.JobStore` and the
read-only CLI commands share (the latter without SQLAlchemy, which :mod:`.jobs` imports).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

from ..checks import check_positive_int, check_timezone
from ..errors import ConfigError
from ..extraction.base import Turn, TurnMessage
from ..secrets.redaction import redact

if TYPE_CHECKING:
    from ..db.direct import DirectPool

REFUSED = "refused"
"""Payload key marking a job row that records a turn which could not be stored."""


@dataclass(frozen=True)
class Job:
    """One row of the job table."""

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
    notes: str | None = None
    """What the job's extraction left out, and why: one line each (None: nothing)."""
    prior_answer: str | None = None
    """Of a claimed job, the last assistant message of the job before it in its
    conversation (:func:`prior_answer`): its turn's :attr:`Turn.before`."""

    @property
    def refused(self) -> bool:
        """The job records a turn that could not be stored (nothing to extract or retry)."""
        return REFUSED in self.payload

    def turn(self) -> Turn:
        """The turn stored in the payload."""
        messages = tuple(
            TurnMessage(role=m["role"], text=m["text"], item_ref=m.get("item_ref"))
            for m in self.payload.get("messages", [])
        )
        observed = datetime.fromisoformat(self.payload["observed_at"])
        zone = self.payload.get("timezone")
        if isinstance(zone, str):
            # In the zone itself, not the offset the ISO text kept: a date reckoned back
            # from it ("in March", said in April) crosses daylight-saving changes right.
            with contextlib.suppress(ConfigError):
                observed = observed.astimezone(check_timezone("timezone", zone))
        return Turn(
            session_id=self.session_id,
            messages=messages,
            observed_at=observed,
            before=self.prior_answer,
        )


@dataclass(frozen=True)
class JobProgress:
    """Where a user's jobs stood at one moment: what a barrier waits for."""

    unfinished: frozenset[int]
    """Ids of the user's jobs still pending or running."""
    watched: dict[int, tuple[str, str | None]]
    """``(status, last_error)`` of each watched job that still exists."""
    failed: dict[int, str | None] = field(default_factory=dict)
    """``last_error`` of the user's jobs that failed since the time asked about."""
    said: tuple[str, ...] = ()
    """The user's words in the newest unfinished turns, newest first (a run's probe
    reads them: :func:`~.progress.run_probe`)."""

    @classmethod
    def from_rows(
        cls, rows: Iterable[Sequence[Any]], watch: Iterable[int] = (), said: Iterable[str] = ()
    ) -> JobProgress:
        """From ``(id, status, last_error)`` rows (and an optional fourth column: whether
        the row is one of the recently failed)."""
        wanted = set(watch)
        unfinished: set[int] = set()
        watched: dict[int, tuple[str, str | None]] = {}
        failed: dict[int, str | None] = {}
        for row in rows:
            job_id, status, last_error = int(row[0]), str(row[1]), row[2]
            if status in ("pending", "running"):
                unfinished.add(job_id)
            if job_id in wanted:
                watched[job_id] = (status, last_error)
            if len(row) > 3 and row[3]:
                failed[job_id] = last_error
        return cls(frozenset(unfinished), watched, failed, tuple(map(str, said)))


@dataclass(frozen=True)
class JobCounts:
    """How many of one user's jobs are in each status, and when one last changed."""

    user_id: str
    counts: dict[str, int]
    updated_at: datetime | None

    @property
    def unfinished(self) -> int:
        """Pending or running: turns not yet applied."""
        return self.counts.get("pending", 0) + self.counts.get("running", 0)

    @property
    def failed(self) -> int:
        return self.counts.get("failed", 0)


EPOCH = datetime.min.replace(tzinfo=UTC)

JOB_COLUMNS = (
    "id, user_id, session_id, payload, status, attempts, last_error, created_at, "
    "updated_at, lease_owner, usage, notes"
)


def prior_answer(user: str) -> str:
    """For a job ``m`` being claimed (its user: ``user``, an expression): the last
    assistant message of the job before it in its conversation, as that job's payload
    keeps it (screened; NULL for a refused turn's row)."""
    return f"""(
    SELECT (SELECT x.msg ->> 'text'
            FROM jsonb_array_elements(p.payload -> 'messages') WITH ORDINALITY AS x(msg, n)
            WHERE x.msg ->> 'role' = 'assistant' ORDER BY x.n DESC LIMIT 1)
    FROM memory_jobs p
    WHERE p.user_id = {user} AND p.session_id = m.session_id AND p.id < m.id
    ORDER BY p.id DESC LIMIT 1
) AS prior_answer"""


def job_from_row(row: Mapping[Any, Any]) -> Job:
    job = Job(**{k: row[k] for k in JOB_COLUMNS.split(", ")})
    if "prior_answer" in row and row["prior_answer"] is not None:
        return replace(job, prior_answer=str(row["prior_answer"]))
    return job


JOB_STATUSES = ("pending", "running", "done", "failed")


async def list_jobs(
    pool: DirectPool,
    *,
    user_id: str | None = None,
    status: str | None = None,
    limit: int = 100,
) -> list[Job]:
    """Jobs, newest first, optionally for one user or one status (one of
    :data:`JOB_STATUSES`)."""
    check_positive_int("limit", limit)
    if status is not None and status not in JOB_STATUSES:
        raise ConfigError(f"status must be one of {', '.join(JOB_STATUSES)}, got {status!r:.40}")
    clauses = []
    params: dict[str, Any] = {"limit": limit}
    if user_id is not None:
        clauses.append("user_id = %(u)s")
        params["u"] = user_id
    if status is not None:
        clauses.append("status = %(status)s")
        params["status"] = status
    where = f"WHERE {' AND '.join(clauses)} " if clauses else ""
    rows = await pool.fetch(
        f"SELECT {JOB_COLUMNS} FROM memory_jobs {where}ORDER BY id DESC LIMIT %(limit)s", params
    )
    return [job_from_row(r) for r in rows]


def scrub(text: str) -> str:
    """``text`` without secrets: registered ones (DSN password, API key) and anything
    :mod:`~mem01session.secrets.scan` recognizes. A job row keeps the turn until the user
    is erased, so a secret said in a conversation must not reach it; the extractor never
    needed it either (the op screen would drop or redact it)."""
    # Imported here: compiling the scan's patterns takes a tenth of a second, which a
    # process that only reads jobs (the inspector) does not need to pay.
    from ..secrets.scan import redact_secrets

    return redact_secrets(redact(text))[0]


def payload_for(messages: Sequence[TurnMessage], observed_at: datetime) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "messages": [
            {"role": m.role, "text": scrub(m.text), "item_ref": m.item_ref} for m in messages
        ],
        "observed_at": observed_at.isoformat(),
    }
    if isinstance(observed_at.tzinfo, ZoneInfo) and observed_at.tzinfo.key != "UTC":
        payload["timezone"] = observed_at.tzinfo.key  # the user's (a session's timezone=)
    return payload


# Nothing is stored for a user whose memory was erased (a tombstone in memory_users).
