"""Batch validation: field checks before any I/O, target checks under the user's lock."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import NoReturn

from ..checks import aware, is_utf8
from ..errors import ConfigError, InvalidOpError
from ..secrets.redaction import MASK
from ..secrets.scan import REDACTED, find_secrets, unique
from .late import LAST_SAID
from .ops import (
    MAX_CONTENT_CHARS,
    MAX_EVIDENCE_CHARS,
    MAX_KEY_CHARS,
    OP_KINDS,
    Op,
    OpKind,
    Provenance,
    was_screened,
)
from .row_mapping import BELIEF_COLUMNS, MAX_BIGINT
from .tx import Pending, Row, Tx

_B_COLUMNS = ", ".join(f"b.{c.strip()}" for c in BELIEF_COLUMNS.split(","))

MAX_REASON_CHARS = MAX_EVIDENCE_CHARS
# Control characters other than whitespace (C0, DEL, C1): what the worker's screen strips.
_CONTROL = re.compile("[\x01-\x08\x0e-\x1f\x7f-\x9f]")
_TEXT_FIELDS = ("content", "key", "evidence", "reason")
_SHOWN_FIELDS = ("content", "key")  # what the block shows

_Fail = Callable[[str], NoReturn]


class TargetNotFoundError(InvalidOpError):
    """An op's target is not an active belief of the user (missing, retired or not theirs)."""

    def __init__(self, index: int, op: str, target: int, reason: str) -> None:
        self.target = target
        super().__init__(index, op, reason)


@dataclass(frozen=True)
class CheckedOp:
    """An op whose fields passed validation, normalized (stripped, truncated, typed)."""

    index: int
    kind: OpKind
    content: str | None
    target: int | None
    targets: tuple[int, ...]
    key: str | None
    confidence: float | None
    evidence: str | None
    reason: str | None
    valid_from: datetime | None

    @property
    def touched(self) -> tuple[int, ...]:
        """The existing beliefs this op acts on."""
        return (self.target,) if self.target is not None else self.targets


def check_ops(ops: Sequence[Op]) -> list[CheckedOp]:
    """Validate every op's fields and the batch as a whole, without touching the database."""
    checked = [_check_one(index, op) for index, op in enumerate(ops)]
    seen: dict[int, int] = {}
    for c in checked:
        for target in c.touched:
            if target in seen:
                raise InvalidOpError(
                    c.index, c.kind, f"belief #{target} is already targeted by op #{seen[target]}"
                )
            seen[target] = c.index
    return checked


def check_provenance(provenance: Provenance) -> None:
    """Reject provenance that PostgreSQL could not store."""
    if not isinstance(provenance, Provenance):
        raise ConfigError(f"provenance must be a Provenance, got {type(provenance).__name__}")
    for name in ("session_id", "item_ref", "extractor"):
        value = getattr(provenance, name)
        if value is not None and (
            not isinstance(value, str) or "\x00" in value or not is_utf8(value)
        ):
            raise ConfigError(f"provenance.{name} must be a UTF-8 string without NUL bytes")
    if provenance.observed_at is not None and not isinstance(provenance.observed_at, datetime):
        raise ConfigError("provenance.observed_at must be a datetime")
    if provenance.job_id is not None and (
        isinstance(provenance.job_id, bool) or not isinstance(provenance.job_id, int)
    ):
        raise ConfigError("provenance.job_id must be an int")


async def look_up_targets(tx: Tx, user_id: str, checked: Sequence[CheckedOp]) -> Pending | None:
    """Send the look-up of the beliefs ``checked`` targets (None: they target none); judge
    it with :func:`check_targets` (call under the user's lock)."""
    ids = sorted({t for c in checked for t in c.touched})
    if not ids:
        return None
    return await tx.later(
        f"SELECT {_B_COLUMNS}, {LAST_SAID} FROM beliefs b "
        "WHERE b.user_id = :u AND b.id = ANY(CAST(:ids AS bigint[]))",
        {"u": user_id, "ids": ids},
    )


async def look_up_targets_of_users(
    tx: Tx, batches: Sequence[tuple[str, Sequence[CheckedOp]]]
) -> Pending | None:
    """:func:`look_up_targets` for several users' batches ``(user_id, checked)`` in one
    statement; judge them with :func:`rows_by_user` and :func:`judge_targets`."""
    pairs = sorted({(u, t) for u, checked in batches for c in checked for t in c.touched})
    if not pairs:
        return None
    return await tx.later(
        f"SELECT {_B_COLUMNS}, {LAST_SAID} FROM beliefs b "
        "JOIN unnest(CAST(:users AS text[]), CAST(:ids AS bigint[])) AS t(u, i) "
        "ON b.user_id = t.u AND b.id = t.i",
        {"users": [u for u, _ in pairs], "ids": [i for _, i in pairs]},
    )


async def check_targets(found: Pending | None, checked: Sequence[CheckedOp]) -> dict[int, Row]:
    """Every target must be an active belief of the user (``found``: the look-up of
    :func:`look_up_targets`); the targets' rows, by id.

    A belief of another user is reported exactly like one that does not exist.
    """
    rows = {int(row["id"]): row for row in await found.rows()} if found is not None else {}
    judge_targets(rows, checked)
    return rows


async def rows_by_user(found: Pending | None) -> dict[str, dict[int, Row]]:
    """What :func:`look_up_targets_of_users` found: per user, the targets' rows by id."""
    out: dict[str, dict[int, Row]] = {}
    for row in await found.rows() if found is not None else []:
        out.setdefault(str(row["user_id"]), {})[int(row["id"])] = row
    return out


def judge_targets(rows: Mapping[int, Row], checked: Sequence[CheckedOp]) -> None:
    """Raise :class:`TargetNotFoundError` for the first target of ``checked`` that is not
    an active belief (``rows``: the user's targets found, by id)."""
    for c in checked:
        for target in c.touched:
            row = rows.get(target)
            if row is None:
                raise TargetNotFoundError(
                    c.index, c.kind, target, f"belief #{target} does not exist for this user"
                )
            if row["status"] != "active":
                raise TargetNotFoundError(
                    c.index, c.kind, target, f"belief #{target} is {row['status']}, not active"
                )


def _check_one(index: int, op: Op) -> CheckedOp:
    if not isinstance(op, Op):
        raise InvalidOpError(index, type(op).__name__, "not an Op")
    name = op.op if isinstance(op.op, str) else repr(op.op)
    kind = name.strip().upper()
    if kind not in OP_KINDS:
        raise InvalidOpError(
            index, name, f"unknown op {name!r:.40}; expected one of {', '.join(OP_KINDS)}"
        )

    def fail(reason: str) -> NoReturn:
        raise InvalidOpError(index, kind, reason)

    scan = not was_screened(op)
    for field in _TEXT_FIELDS:
        value = getattr(op, field)
        if value is None:
            continue
        if not isinstance(value, str):
            fail(f"{field} must be a string, got {type(value).__name__}")
        if "\x00" in value:
            fail(f"{field} contains a NUL byte")
        if not is_utf8(value):
            fail(f"{field} is not valid UTF-8 (it holds a lone surrogate)")
        if field in _SHOWN_FIELDS and (control := _CONTROL.search(value)):
            # A terminal's escapes or bells in a statement would come back, broken, in
            # every block; the worker's screen strips them first. (Evidence and reasons
            # are the user's words and a note: kept, and escaped wherever shown.)
            fail(f"{field} contains a control character (U+{ord(control.group()):04X})")
        # The worker's screen drops or redacts these first (and is not repeated); a direct
        # write (a correction, a remembered statement, an application's own ops) is
        # refused here instead. The marks of a secret already redacted are not one.
        if scan and (found := find_secrets(value.replace(REDACTED, " ").replace(MASK, " "))):
            labels = ", ".join(unique(m.label for m in found))
            fail(f"{field} holds a secret ({labels}); memory never stores one")

    content = op.content.strip() if op.content is not None else None
    if content is not None:
        if not content:
            fail("content is empty")
        if len(content) > MAX_CONTENT_CHARS:
            fail(f"content is {len(content)} characters, over the limit of {MAX_CONTENT_CHARS}")
    elif kind in ("ADD", "SUPERSEDE", "MERGE"):
        fail("content is required")

    confidence = _confidence(op.confidence, fail)
    if kind == "UPDATE" and content is None and confidence is None:
        fail("UPDATE needs content and/or confidence")

    target: int | None = None
    targets: tuple[int, ...] = ()
    if kind == "ADD":
        if op.target is not None or op.targets:
            fail("ADD takes no target")
    elif kind == "MERGE":
        if op.target is not None:
            fail("MERGE takes targets, not target")
        targets = tuple(dict.fromkeys(_belief_id(index, kind, t, fail) for t in op.targets))
        if len(targets) < 2:
            fail(f"MERGE needs at least 2 distinct targets, got {len(targets)}")
    else:
        if op.targets:
            fail(f"{kind} takes one target, not targets")
        if op.target is None:
            fail("target is required")
        target = _belief_id(index, kind, op.target, fail)

    reason = _clip(op.reason, MAX_REASON_CHARS)
    if kind == "INVALIDATE" and reason is None:
        fail("reason is required")

    key = op.key.strip() or None if op.key is not None else None
    if key is not None and len(key) > MAX_KEY_CHARS:
        fail(f"key is {len(key)} characters, over the limit of {MAX_KEY_CHARS}")

    valid_from = op.valid_from
    if valid_from is not None:
        if not isinstance(valid_from, datetime):
            fail(f"valid_from must be a datetime, got {type(valid_from).__name__}")
        valid_from = aware(valid_from)

    return CheckedOp(
        index=index,
        kind=kind,
        content=content,
        target=target,
        targets=targets,
        key=key,
        confidence=confidence,
        evidence=_clip(op.evidence, MAX_EVIDENCE_CHARS),
        reason=reason,
        valid_from=valid_from,
    )


def _confidence(value: object, fail: _Fail) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        fail(f"confidence must be a number, got {type(value).__name__}")
    number = float(value)
    if not 0.0 <= number <= 1.0:  # also false for NaN
        fail(f"confidence must be between 0 and 1, got {value!r}")
    return number


def _belief_id(index: int, kind: str, value: object, fail: _Fail) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        fail(f"target must be a belief id (int), got {value!r:.40}")
    if not 1 <= value <= MAX_BIGINT:
        raise TargetNotFoundError(
            index, kind, value, f"belief #{value} does not exist for this user"
        )
    return value


def _clip(value: str | None, limit: int) -> str | None:
    if value is None:
        return None
    value = value.strip()
    return value[:limit] or None
