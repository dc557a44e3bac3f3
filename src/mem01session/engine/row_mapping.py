"""Row <-> record mapping shared by the read and write paths."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, cast

from .records import Belief, BeliefStatus, Source

MAX_BIGINT = 2**63 - 1

# Columns every belief query selects (never the embedding or tsvector: they are large).
BELIEF_COLUMNS = (
    "id, user_id, content, key, status, confidence, valid_from, valid_to, created_at, "
    "updated_at, version, superseded_by, merged_into, last_confirmed_at"
)


def belief_from_row(row: Mapping[Any, Any], sources: Sequence[Source] = ()) -> Belief:
    return Belief(
        id=int(row["id"]),
        user_id=str(row["user_id"]),
        content=str(row["content"]),
        key=row["key"],
        status=cast(BeliefStatus, row["status"]),
        confidence=float(row["confidence"]),
        valid_from=row["valid_from"],
        valid_to=row["valid_to"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        version=int(row["version"]),
        superseded_by=row["superseded_by"],
        merged_into=row["merged_into"],
        last_confirmed_at=row["last_confirmed_at"],
        sources=tuple(sources),
    )


BELIEF_FIELDS = len(BELIEF_COLUMNS.split(","))


def belief_from_values(values: Sequence[Any], sources: tuple[Source, ...] = ()) -> Belief:
    """A belief from :data:`BELIEF_COLUMNS`' values in order, as PostgreSQL's binary form
    loads them (ints, floats and datetimes already): they are :class:`Belief`'s fields in
    that order."""
    (bid, user, content, key, status, confidence, valid_from, valid_to, created_at,
     updated_at, version, superseded_by, merged_into, confirmed) = values  # fmt: skip
    return Belief(
        bid, user, content, key, status, confidence, valid_from, valid_to, created_at,
        updated_at, version, superseded_by, merged_into, confirmed, sources,
    )  # fmt: skip


def source_from_row(row: Mapping[Any, Any]) -> Source:
    return Source(
        session_id=row["session_id"],
        item_ref=row["item_ref"],
        evidence=row["evidence"],
        observed_at=row["observed_at"],
        extractor=row["extractor"],
        job_id=row["job_id"],
        episode_id=row.get("episode_id"),
    )


def vector_literal(vec: Sequence[float]) -> str:
    """pgvector's text form, for binding as a parameter cast with ``::vector``."""
    return "[" + ("%.7g," * len(vec) % tuple(vec))[:-1] + "]"


def snapshot(row: Mapping[Any, Any]) -> dict[str, object]:
    """A belief's state as stored in the ledger's ``before``/``after``."""

    def iso(value: datetime | None) -> str | None:
        return value.isoformat() if value is not None else None

    return {
        "id": int(row["id"]),
        "content": row["content"],
        "key": row["key"],
        "status": row["status"],
        "confidence": float(row["confidence"]),
        "version": int(row["version"]),
        "valid_from": iso(row["valid_from"]),
        "valid_to": iso(row["valid_to"]),
        "superseded_by": row["superseded_by"],
        "merged_into": row["merged_into"],
    }
