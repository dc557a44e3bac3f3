"""Reading users' memory out as a document (:mod:`.document`), streamed.

Each user is read in one read-only, repeatable-read transaction (a consistent picture
even while the application writes), through server-side cursors: the rows come in
batches and go out as lines, so a user with a lifetime of memory costs the memory of a
batch, plus one integer per belief (its ref, for the ledger's snapshots).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from psycopg.rows import dict_row

from ...checks import check_id
from ...errors import ConfigError
from .document import FORMAT, VERSION, Record

if TYPE_CHECKING:
    import psycopg

    from ...db.direct import DirectPool

BATCH = 500
"""Rows a cursor brings per round trip."""

USER_SQL = "SELECT user_id, timezone, created_at, erased_at FROM memory_users WHERE user_id = %(u)s"
_USERS_AFTER = (
    "SELECT user_id FROM memory_users WHERE user_id > %(after)s ORDER BY user_id LIMIT %(n)s"
)
# A turn is named by its job's key: an imported one's without the prefix the import gave it.
_TURN = "coalesce(regexp_replace(j.idempotency_key, '^import:', ''), 'job:' || {job})"
_EPISODES = f"""
SELECT row_number() OVER (ORDER BY e.id) AS ref, e.session_id,
       {_TURN.format(job="e.job_id")} AS turn,
       e.message, e.passage, e.item_ref, e.role, e.content, e.context, e.said_at, e.hidden_at,
       e.created_at
FROM episodes e LEFT JOIN memory_jobs j ON j.user_id = e.user_id AND j.id = e.job_id
WHERE e.user_id = %(u)s ORDER BY e.id"""
# Each list of the user's rows is joined whole (hash joins), never looked up per belief.
_BELIEFS = f"""
WITH r AS (SELECT id, row_number() OVER (ORDER BY id) AS ref FROM beliefs WHERE user_id = %(u)s),
er AS (SELECT id, row_number() OVER (ORDER BY id) AS ref FROM episodes WHERE user_id = %(u)s),
src AS (
  SELECT s.belief_id, json_agg(json_build_object(
           'session', s.session_id, 'item_ref', s.item_ref, 'evidence', s.evidence,
           'observed_at', s.observed_at, 'extractor', s.extractor,
           'turn', CASE WHEN s.job_id IS NOT NULL THEN {_TURN.format(job="s.job_id")} END,
           'episode', er.ref, 'created_at', s.created_at) ORDER BY s.id) AS sources
  FROM belief_sources s LEFT JOIN er ON er.id = s.episode_id
  LEFT JOIN memory_jobs j ON j.user_id = s.user_id AND j.id = s.job_id
  WHERE s.user_id = %(u)s GROUP BY s.belief_id
),
tw AS (
  SELECT t.belief_id, array_agg(tr.ref ORDER BY tr.ref) AS twins
  FROM belief_twins t JOIN r tr ON tr.id = t.twin_id WHERE t.user_id = %(u)s
  GROUP BY t.belief_id
)
SELECT b.id, r.ref, b.content, b.key, b.status, b.confidence, b.version, b.valid_from,
       b.valid_to, b.created_at, b.updated_at, b.last_confirmed_at,
       sr.ref AS superseded_by, mr.ref AS merged_into, tw.twins, src.sources
FROM beliefs b JOIN r ON r.id = b.id
LEFT JOIN r sr ON sr.id = b.superseded_by LEFT JOIN r mr ON mr.id = b.merged_into
LEFT JOIN src ON src.belief_id = b.id LEFT JOIN tw ON tw.belief_id = b.id
WHERE b.user_id = %(u)s ORDER BY b.id"""
_EVENTS = f"""
SELECT e.op, e.belief_id, e.related_ids, e.before, e.after, e.reason,
       CASE WHEN e.job_id IS NOT NULL THEN {_TURN.format(job="e.job_id")} END AS turn, e.created_at
FROM belief_events e LEFT JOIN memory_jobs j ON j.user_id = e.user_id AND j.id = e.job_id
WHERE e.user_id = %(u)s ORDER BY e.id"""

_SNAPSHOT_IDS = ("id", "superseded_by", "merged_into")


def header(model: str | None, now: datetime, source: str = FORMAT) -> Record:
    """The document's first line."""
    return {
        "kind": "header",
        "format": FORMAT,
        "version": VERSION,
        "exported_at": now.isoformat(),
        "embedding_model": model,
        "source": source,
    }


def end(users: int, records: int) -> Record:
    """The document's last line."""
    return {"kind": "end", "users": users, "records": records}


async def all_user_ids(pool: DirectPool) -> AsyncIterator[str]:
    """Every user the database holds a row for, erased ones included, by id."""
    after = ""
    while True:
        rows = await pool.fetch(_USERS_AFTER, {"after": after, "n": BATCH})
        for row in rows:
            yield str(row["user_id"])
        if len(rows) < BATCH:
            return
        after = str(rows[-1]["user_id"])


async def export_user(pool: DirectPool, user_id: str) -> AsyncIterator[Record]:
    """The user's lines of a document: the user, episodes, beliefs, events.
    :class:`~mem01session.errors.ConfigError` if the database holds nothing of the user."""
    user_id = check_id("user_id", user_id)
    async with pool.leased() as (conn, _), conn.transaction():
        await conn.execute(b"SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        # Every row of the user is read, joined whole: no nested loops (where the table's
        # statistics are not made yet, as after a bulk import, the planner chose them on row
        # estimates of a hundred: a user's rows squared, minutes at 100,000).
        await conn.execute(b"SET LOCAL enable_nestloop = off")
        await conn.execute(b"SET LOCAL cursor_tuple_fraction = 1.0")
        async with conn.cursor(row_factory=dict_row) as cursor:
            await cursor.execute(USER_SQL, {"u": user_id})
            found = await cursor.fetchall()
        if not found:
            raise ConfigError(f"no memory of user {user_id!r} here")
        user = found[0]
        yield {
            "kind": "user",
            "user": user_id,
            "timezone": user["timezone"],
            "created_at": _iso(user["created_at"]),
            "erased_at": _iso(user["erased_at"]),
        }
        if user["erased_at"] is not None:
            return
        async for row in _stream(conn, _EPISODES, user_id):
            yield _episode(user_id, row)
        refs: dict[int, int] = {}
        async for row in _stream(conn, _BELIEFS, user_id):
            refs[int(row["id"])] = int(row["ref"])
            yield _belief(user_id, row)
        async for row in _stream(conn, _EVENTS, user_id):
            yield _event(user_id, row, refs)


async def _stream(
    conn: psycopg.AsyncConnection[Any], sql: str, user_id: str
) -> AsyncIterator[dict[str, Any]]:
    async with conn.cursor(name="mem01_export", row_factory=dict_row) as cursor:
        cursor.itersize = BATCH
        await cursor.execute(sql, {"u": user_id})
        async for row in cursor:
            yield row


def _episode(user_id: str, row: Mapping[str, Any]) -> Record:
    return {
        "kind": "episode",
        "user": user_id,
        "ref": int(row["ref"]),
        "session": row["session_id"],
        "turn": row["turn"],
        "message": int(row["message"]),
        "passage": int(row["passage"]),
        "item_ref": row["item_ref"],
        "role": row["role"],
        "content": row["content"],
        "context": row["context"],
        "said_at": _iso(row["said_at"]),
        "hidden_at": _iso(row["hidden_at"]),
        "created_at": _iso(row["created_at"]),
    }


def _belief(user_id: str, row: Mapping[str, Any]) -> Record:
    sources = row["sources"] or []
    if isinstance(sources, str):
        sources = json.loads(sources)
    return {
        "kind": "belief",
        "user": user_id,
        "ref": int(row["ref"]),
        "content": row["content"],
        "key": row["key"],
        "status": row["status"],
        "confidence": float(row["confidence"]),
        "version": int(row["version"]),
        "valid_from": _iso(row["valid_from"]),
        "valid_to": _iso(row["valid_to"]),
        "created_at": _iso(row["created_at"]),
        "updated_at": _iso(row["updated_at"]),
        "last_confirmed_at": _iso(row["last_confirmed_at"]),
        "superseded_by": _int(row["superseded_by"]),
        "merged_into": _int(row["merged_into"]),
        "twins": [int(t) for t in row["twins"] or ()],
        "sources": [_source(s) for s in sources],
    }


def _source(raw: Mapping[str, Any]) -> Record:
    out = dict(raw)
    for name in ("observed_at", "created_at"):
        if isinstance(out.get(name), str):
            out[name] = datetime.fromisoformat(out[name]).isoformat()
    return out


def _event(user_id: str, row: Mapping[str, Any], refs: Mapping[int, int]) -> Record:
    belief = row["belief_id"]
    return {
        "kind": "event",
        "user": user_id,
        "op": row["op"],
        "belief": refs.get(int(belief)) if belief is not None else None,
        "related": [refs[int(i)] for i in row["related_ids"] or () if int(i) in refs],
        "before": map_snapshot(row["before"], refs),
        "after": map_snapshot(row["after"], refs),
        "reason": row["reason"],
        "turn": row["turn"],
        "created_at": _iso(row["created_at"]),
    }


def map_snapshot(snapshot: Any, ids: Mapping[int, int]) -> Any:
    """A ledger snapshot (``before``/``after``: a belief's state, or a merge's sources)
    with the belief ids in it mapped through ``ids`` (one the map lacks becomes None)."""
    if not isinstance(snapshot, dict):
        return snapshot
    out = dict(snapshot)
    for name in _SNAPSHOT_IDS:
        value = out.get(name)
        if isinstance(value, int) and not isinstance(value, bool):
            out[name] = ids.get(value)
    if isinstance(out.get("sources"), list):
        out["sources"] = [map_snapshot(s, ids) for s in out["sources"]]
    return out


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def _int(value: Any) -> int | None:
    return int(value) if value is not None else None


def user_ids_of(user_ids: Sequence[str]) -> list[str]:
    """``user_ids`` checked, without repeats (one id alone is refused: a ``str`` is a
    sequence of its letters, each of which would be read as a user)."""
    if isinstance(user_ids, str):
        raise ConfigError(f"user_ids must be a list of user ids, not one: [{user_ids!r:.40}]?")
    return list(dict.fromkeys(check_id("user_id", u) for u in user_ids))
