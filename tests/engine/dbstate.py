"""Raw reads of the write path's tables, for asserting exactly what changed."""

from __future__ import annotations

from typing import Any

from sqlalchemy import text

from mem01session.db.schema import USER_TABLES as TABLES
from mem01session.engine import BeliefEngine


def order_of(table: str) -> str:
    """A stable order for the rows of a user-scoped table (its primary key)."""
    if table == "memory_users":
        return "user_id"
    if table == "belief_twins":
        return "user_id, belief_id, twin_id"
    return "user_id, lexeme" if table.endswith("_terms") else "user_id, id"


async def table_rows(engine: BeliefEngine, user_id: str | None = None) -> dict[str, list[str]]:
    """Every row of every table (optionally one user's), in a stable order."""
    out: dict[str, list[str]] = {}
    async with engine.db.sa_engine.connect() as conn:
        for table in TABLES:
            where = "" if user_id is None else "WHERE user_id = :u"
            order = order_of(table)
            # The whole row as text: comparable, embedding included.
            rows = await conn.scalars(
                text(f"SELECT CAST(t AS text) FROM {table} t {where} ORDER BY {order}"),
                {"u": user_id},
            )
            out[table] = list(rows)
    return out


async def counts(engine: BeliefEngine, user_id: str) -> dict[str, int]:
    """Row counts per table for one user."""
    return {t: len(rows) for t, rows in (await table_rows(engine, user_id)).items()}


async def belief_column(engine: BeliefEngine, user_id: str, belief_id: int, column: str) -> Any:
    """One stored column of one belief (including those the records leave out)."""
    async with engine.db.sa_engine.connect() as conn:
        return await conn.scalar(
            text(f"SELECT {column} FROM beliefs WHERE user_id = :u AND id = :id"),
            {"u": user_id, "id": belief_id},
        )
