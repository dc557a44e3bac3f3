"""Re-embedding: give beliefs and episodes whose vectors another model made a vector of
the current one.

Safe while the application runs: each batch is embedded outside any transaction and
written with one statement that touches a row only if its text and its vector's model are
still what was read (a belief revised meanwhile already has a current vector); a
belief's near-duplicate links (:mod:`.near`) are made anew in the same transaction. Resumable:
it walks each table once in key order and converts what it finds; a second run converts
whatever is left.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from ..checks import check_id, check_positive_int
from . import episodes, near
from .engine_parts import EngineParts
from .records import ReembedReport
from .row_mapping import vector_literal
from .tx import Row, Tx, transaction

TABLES = ("beliefs", "episodes")
_SCOPE = (
    "embedding_model IS DISTINCT FROM %(model)s AND (%(user)s::text IS NULL OR user_id = %(user)s)"
)
_COUNT = " UNION ALL ".join(f"SELECT count(*) AS n FROM {t} WHERE {_SCOPE}" for t in TABLES)
_BATCH = """
SELECT user_id, id, content, {context} AS context, embedding_model FROM {table}
WHERE {scope} AND (user_id, id) > (%(after_user)s, %(after_id)s)
ORDER BY user_id, id LIMIT %(limit)s"""
_WRITE = """
UPDATE {table} b SET embedding = CAST(v.vec AS vector), embedding_model = :model
FROM unnest(CAST(:users AS text[]), CAST(:ids AS bigint[]), CAST(:contents AS text[]),
            CAST(:olds AS text[]), CAST(:vecs AS text[])) AS v(user_id, id, content, old, vec)
WHERE b.user_id = v.user_id AND b.id = v.id AND b.content = v.content
  AND b.embedding_model IS NOT DISTINCT FROM v.old
RETURNING b.user_id, b.id"""

Progress = Callable[[int], None]


async def count_other_model(parts: EngineParts, user_id: str | None = None) -> int:
    """How many beliefs and episodes (of ``user_id``, or of everyone) have no vector of the
    current model."""
    user = None if user_id is None else check_id("user_id", user_id)
    rows = await parts.db.direct.fetch(_COUNT, {"model": parts.embedder.name, "user": user})
    return sum(int(r["n"]) for r in rows)


async def reembed(
    parts: EngineParts,
    *,
    user_id: str | None = None,
    batch_size: int = 64,
    progress: Progress | None = None,
) -> ReembedReport:
    """Embed every belief and episode whose vector another model made (or that has none)
    with ``parts.embedder``; ``progress`` is told how many were done after each batch."""
    user = None if user_id is None else check_id("user_id", user_id)
    check_positive_int("batch_size", batch_size)
    model = parts.embedder.name
    found = await count_other_model(parts, user)
    converted = skipped = 0
    for table in TABLES:
        context = "context" if table == "episodes" else "NULL::text"
        batch = _BATCH.format(table=table, scope=_SCOPE, context=context)
        write = _WRITE.format(table=table)
        after: tuple[str, int] = ("", 0)
        while True:
            rows = await parts.db.direct.fetch(
                batch,
                {
                    "model": model,
                    "user": user,
                    "after_user": after[0],
                    "after_id": after[1],
                    "limit": batch_size,
                },
            )
            if not rows:
                break
            after = (rows[-1]["user_id"], int(rows[-1]["id"]))
            # A belief has no context: its vector is its statement's.
            vectors = await episodes.embed_said(
                parts.embedder, [(r["content"], r["context"]) for r in rows]
            )
            params = {
                "model": model,
                "users": [r["user_id"] for r in rows],
                "ids": [r["id"] for r in rows],
                "contents": [r["content"] for r in rows],
                "olds": [r["embedding_model"] for r in rows],
                "vecs": [vector_literal(v) for v in vectors],
            }
            # A belief's new vector and its near-duplicate links: one transaction.
            written = await transaction(
                parts.db.direct, functools.partial(_write, write, params, table == "beliefs")
            )
            converted += len(written)
            skipped += len(rows) - len(written)
            if progress is not None:
                progress(len(rows))
    return ReembedReport(model, found, converted, skipped)


async def _write(sql: str, params: dict[str, Any], relink: bool, tx: Tx) -> list[Row]:
    written = await tx.rows(sql, params)
    if relink:
        await _relink(tx, written)
    return written


async def _relink(tx: Tx, written: list[Row]) -> None:
    """Link re-embedded beliefs to their near-duplicates under the new model, user by
    user (each statement stays on one user's rows)."""
    by_user: dict[str, list[int]] = {}
    for row in written:
        by_user.setdefault(row["user_id"], []).append(int(row["id"]))
    for user_id, ids in by_user.items():
        await near.link(tx, user_id, ids, anew=ids)
