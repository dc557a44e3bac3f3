"""Inspection: one belief, the timeline, the ledger. Plain reads, no ranking."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from ..checks import check_id, check_positive_int
from ..errors import BeliefNotFoundError
from .parts import EngineParts
from .records import Belief, LedgerEvent, Source
from .rows import BELIEF_COLUMNS, MAX_BIGINT, belief_from_row, source_from_row


async def get_belief(parts: EngineParts, user_id: str, belief_id: int) -> Belief:
    """The user's belief ``belief_id`` with its sources (oldest first), in any status."""
    user_id = check_id("user_id", user_id)
    if isinstance(belief_id, bool) or not isinstance(belief_id, int):
        raise BeliefNotFoundError(f"belief ids are ints, got {belief_id!r:.40}")
    if not 1 <= belief_id <= MAX_BIGINT:
        raise BeliefNotFoundError(f"belief #{belief_id} does not exist for this user")
    async with parts.db.sa_engine.connect() as conn:
        row = (
            (
                await conn.execute(
                    text(f"SELECT {BELIEF_COLUMNS} FROM beliefs WHERE user_id = :u AND id = :id"),
                    {"u": user_id, "id": belief_id},
                )
            )
            .mappings()
            .first()
        )
        if row is None:
            raise BeliefNotFoundError(f"belief #{belief_id} does not exist for this user")
        sources = await load_sources(conn, user_id, [belief_id])
    return belief_from_row(row, sources.get(belief_id, ()))


async def history(
    parts: EngineParts, user_id: str, include_inactive: bool = True, limit: int = 100
) -> list[Belief]:
    """The user's most recent ``limit`` beliefs with sources, oldest first (valid_from, id)."""
    user_id = check_id("user_id", user_id)
    check_positive_int("limit", limit)
    status = "" if include_inactive else "AND status = 'active' "
    async with parts.db.sa_engine.connect() as conn:
        rows = (
            (
                await conn.execute(
                    text(
                        f"SELECT {BELIEF_COLUMNS} FROM beliefs WHERE user_id = :u {status}"
                        "ORDER BY valid_from DESC, id DESC LIMIT :limit"
                    ),
                    {"u": user_id, "limit": limit},
                )
            )
            .mappings()
            .all()
        )
        sources = await load_sources(conn, user_id, [int(r["id"]) for r in rows])
    return [belief_from_row(r, sources.get(int(r["id"]), ())) for r in reversed(rows)]


async def keyed(parts: EngineParts, user_id: str, limit: int = 50) -> list[Belief]:
    """The user's active beliefs that fill a key slot (``home.city``…), newest first.

    Extractors need them whatever the turn's wording: a new value for a slot replaces the
    old one even when the two share no words.
    """
    user_id = check_id("user_id", user_id)
    check_positive_int("limit", limit)
    async with parts.db.sa_engine.connect() as conn:
        rows = (
            await conn.execute(
                text(
                    f"SELECT {BELIEF_COLUMNS} FROM beliefs WHERE user_id = :u "
                    "AND status = 'active' AND key IS NOT NULL "
                    "ORDER BY updated_at DESC, id DESC LIMIT :limit"
                ),
                {"u": user_id, "limit": limit},
            )
        ).mappings()
        return [belief_from_row(r) for r in rows]


async def ledger(
    parts: EngineParts, user_id: str, belief_id: int | None = None, limit: int = 200
) -> list[LedgerEvent]:
    """The user's most recent ``limit`` ledger events, oldest first.

    With ``belief_id``: the events whose subject or related beliefs include it.
    """
    user_id = check_id("user_id", user_id)
    check_positive_int("limit", limit)
    where = (
        ""
        if belief_id is None
        else "AND (belief_id = CAST(:b AS bigint) OR CAST(:b AS bigint) = ANY(related_ids)) "
    )
    async with parts.db.sa_engine.connect() as conn:
        rows = (
            (
                await conn.execute(
                    text(
                        "SELECT id, op, belief_id, related_ids, before, after, reason, job_id, "
                        f"created_at FROM belief_events WHERE user_id = :u {where}"
                        "ORDER BY id DESC LIMIT :limit"
                    ),
                    {"u": user_id, "b": belief_id, "limit": limit},
                )
            )
            .mappings()
            .all()
        )
    return [
        LedgerEvent(
            id=int(r["id"]),
            op=str(r["op"]),
            belief_id=r["belief_id"],
            related_ids=tuple(int(i) for i in r["related_ids"]),
            before=r["before"],
            after=r["after"],
            reason=r["reason"],
            job_id=r["job_id"],
            created_at=r["created_at"],
        )
        for r in reversed(rows)
    ]


async def load_sources(
    conn: AsyncConnection, user_id: str, belief_ids: Sequence[int]
) -> dict[int, list[Source]]:
    """Sources of the given beliefs of the user, oldest first per belief."""
    if not belief_ids:
        return {}
    rows = (
        await conn.execute(
            text(
                "SELECT belief_id, session_id, item_ref, evidence, observed_at, extractor, job_id "
                "FROM belief_sources "
                "WHERE user_id = :u AND belief_id = ANY(CAST(:ids AS bigint[])) "
                "ORDER BY observed_at, id"
            ),
            {"u": user_id, "ids": list(belief_ids)},
        )
    ).mappings()
    out: dict[int, list[Source]] = {}
    for row in rows:
        out.setdefault(int(row["belief_id"]), []).append(source_from_row(row))
    return out
