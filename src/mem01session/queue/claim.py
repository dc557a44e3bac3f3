"""Claiming jobs: one user at a time, so that the same statements serve one PostgreSQL
server and a cluster distributed by ``user_id`` (Citus).

A worker leases the oldest unfinished job of a user. Doing that for many users in one
statement (``FOR UPDATE SKIP LOCKED`` over the whole table) is what a cluster refuses: a
locking read must stay within one shard, that is, one user. So a claim has two steps:

1. **Find** users whose oldest unfinished job is claimable: a plain read without locks,
   oldest job first (on a cluster, every shard answers and the coordinator merges).
2. **Claim** each of them in turn with one autocommit statement on that user's rows only
   (``FOR UPDATE SKIP LOCKED``, then the lease), until ``limit`` jobs are leased. On one
   server (not a cluster) the same conditions are checked for all of them in one
   statement, a lateral subquery per user.

Correctness lives in step 2 alone, exactly as in a single-statement claim: it re-checks
that the job is still claimable and that no older job of the user is pending or running,
skips a job another worker is claiming at that moment, and leases at most one job per
user. Step 1 only proposes; what it saw may be stale by the time of step 2, and a stale
proposal claims nothing. Per-user order is therefore kept exactly; the order across users
is oldest-first as step 1 saw it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from typing import Any, TypeVar

from ..db.direct import DirectPool

J = TypeVar("J")

# Rounds of step 1 per claim: when other workers took every proposed user, look again.
ROUNDS = 3

_CLAIMABLE = (
    "((j.status = 'pending' AND j.run_after <= %(now)s) "
    "OR (j.status = 'running' AND j.lease_until < %(now)s))"
)
# One probe per status: each an index range of (user_id, status, id), where a probe for
# both statuses at once walked the user's jobs by id through every finished one.
_OLDEST = " AND ".join(
    "NOT EXISTS (SELECT 1 FROM memory_jobs e WHERE e.user_id = j.user_id "
    f"AND e.status = '{status}' AND e.id < j.id)"
    for status in ("pending", "running")
)
# Each user's oldest unfinished job (a sort of the unfinished rows, no probe per row),
# kept if it is claimable.
_FIND = f"""
SELECT j.user_id FROM (
    SELECT DISTINCT ON (u.user_id) u.user_id, u.id, u.status, u.run_after, u.lease_until
    FROM memory_jobs u WHERE u.status IN ('pending', 'running')
    ORDER BY u.user_id, u.id
) j
WHERE {_CLAIMABLE} AND j.user_id <> ALL(%(skip)s)
ORDER BY j.id LIMIT %(scan)s"""


def _returning(columns: str, extra: str) -> str:
    return ", ".join(["m." + c.strip() for c in columns.split(",")] + ([extra] if extra else []))


def claim_statement(columns: str, extra: str = "") -> str:
    """The step-2 statement for one user, returning ``columns`` of the leased job (and the
    ``extra`` expression: it may read the job as ``m``)."""
    returning = _returning(columns, extra)
    return f"""
WITH next AS (
    SELECT j.id FROM memory_jobs j
    WHERE j.user_id = %(u)s AND {_CLAIMABLE} AND {_OLDEST}
    ORDER BY j.id
    LIMIT 1
    FOR UPDATE SKIP LOCKED
)
UPDATE memory_jobs m
SET status = 'running', lease_owner = %(w)s, lease_until = %(until)s,
    attempts = m.attempts + 1, updated_at = %(now)s
FROM next
WHERE m.user_id = %(u)s AND m.id = next.id
RETURNING {returning}"""


def claim_many_statement(columns: str, extra: str = "") -> str:
    """Step 2 for several users (``%(users)s``) in one statement, returning ``columns`` (and
    ``extra``) of the jobs leased: the same conditions as :func:`claim_statement`, per
    user. For one server only (a cluster refuses a locking read across shards)."""
    returning = _returning(columns, extra)
    return f"""
WITH next AS (
    SELECT n.id, n.user_id FROM unnest(CAST(%(users)s AS text[])) AS u(user_id)
    CROSS JOIN LATERAL (
        SELECT j.id, j.user_id FROM memory_jobs j
        WHERE j.user_id = u.user_id AND {_CLAIMABLE} AND {_OLDEST}
        ORDER BY j.id
        LIMIT 1
        FOR UPDATE SKIP LOCKED
    ) AS n
)
UPDATE memory_jobs m
SET status = 'running', lease_owner = %(w)s, lease_until = %(until)s,
    attempts = m.attempts + 1, updated_at = %(now)s
FROM next
WHERE m.user_id = next.user_id AND m.id = next.id
RETURNING {returning}"""


async def claim_jobs(
    pool: DirectPool,
    statements: tuple[str, str],
    make: Callable[[Mapping[str, Any]], J],
    *,
    worker_id: str,
    now: datetime,
    lease: timedelta,
    limit: int,
) -> list[J]:
    """Lease up to ``limit`` jobs (``statements``: from :func:`claim_statement` and
    :func:`claim_many_statement`), each the oldest unfinished job of its user, in the
    order step 1 found their users. On one server the users step 1 found are claimed
    with one statement; on a cluster, one statement per user."""
    one, many = statements
    leased: list[J] = []
    tried: list[str] = []
    params = {"w": worker_id, "now": now, "until": now + lease}
    for _ in range(ROUNDS if limit > 0 else 0):
        scan = 2 * (limit - len(leased))
        found = await pool.fetch(_FIND, {"now": now, "skip": tried, "scan": scan})
        users = [str(row["user_id"]) for row in found]
        tried += users
        while users and len(leased) < limit:
            need = limit - len(leased)
            if pool.distributed is False:
                chunk, users = users[:need], users[need:]
                rows = await pool.fetch(many, params | {"users": chunk})
                order = {user_id: i for i, user_id in enumerate(chunk)}
                rows.sort(key=lambda r: order[str(r["user_id"])])
            else:
                rows = await pool.fetch(one, params | {"u": users.pop(0)})
            leased.extend(make(r) for r in rows)
        if len(leased) >= limit:
            return leased
        if len(found) < scan:  # nobody else was waiting when step 1 looked
            break
    return leased
