"""Lifecycle ops: what the extractor proposes and the engine applies.

A batch of ops is applied whole or not at all. Targets are belief ids (ints) when given
to the engine; extractors address candidates by short aliases (``"b1"``) which
:func:`resolve_aliases` maps back to ids before the engine sees them.
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Literal

from ..errors import InvalidOpError

OpKind = Literal["ADD", "UPDATE", "SUPERSEDE", "INVALIDATE", "MERGE"]
OP_KINDS: tuple[OpKind, ...] = ("ADD", "UPDATE", "SUPERSEDE", "INVALIDATE", "MERGE")

MAX_CONTENT_CHARS = 1000
MAX_EVIDENCE_CHARS = 500
MAX_KEY_CHARS = 200


@dataclass(frozen=True)
class Op:
    """One proposed change to a user's beliefs.

    ========== ===================================================================
    op         fields
    ========== ===================================================================
    ADD        ``content`` [``key``, ``confidence``]
    UPDATE     ``target``, ``content`` and/or ``confidence`` (revise in place)
    SUPERSEDE  ``target``, ``content`` [``key``, ``confidence``] (new replaces old)
    INVALIDATE ``target``, ``reason`` (no longer true, no replacement)
    MERGE      ``targets`` (two or more), ``content`` (duplicates collapse)
    ========== ===================================================================

    ``evidence`` is the quote from the conversation the op rests on; ``valid_from`` the
    time the fact started to hold, when the user said so (for an INVALIDATE: the time it
    stopped holding, which :meth:`invalidate` takes as ``valid_to``).
    """

    op: str
    content: str | None = None
    target: int | str | None = None
    targets: tuple[int | str, ...] = ()
    key: str | None = None
    confidence: float | None = None
    evidence: str | None = None
    reason: str | None = None
    valid_from: datetime | None = None

    @classmethod
    def add(
        cls,
        content: str,
        *,
        key: str | None = None,
        confidence: float | None = None,
        evidence: str | None = None,
        valid_from: datetime | None = None,
    ) -> Op:
        return cls(
            "ADD",
            content=content,
            key=key,
            confidence=confidence,
            evidence=evidence,
            valid_from=valid_from,
        )

    @classmethod
    def update(
        cls,
        target: int | str,
        content: str | None = None,
        *,
        confidence: float | None = None,
        evidence: str | None = None,
        reason: str | None = None,
    ) -> Op:
        return cls(
            "UPDATE",
            target=target,
            content=content,
            confidence=confidence,
            evidence=evidence,
            reason=reason,
        )

    @classmethod
    def supersede(
        cls,
        target: int | str,
        content: str,
        *,
        key: str | None = None,
        confidence: float | None = None,
        evidence: str | None = None,
        reason: str | None = None,
        valid_from: datetime | None = None,
    ) -> Op:
        return cls(
            "SUPERSEDE",
            target=target,
            content=content,
            key=key,
            confidence=confidence,
            evidence=evidence,
            reason=reason,
            valid_from=valid_from,
        )

    @classmethod
    def invalidate(
        cls,
        target: int | str,
        reason: str,
        *,
        evidence: str | None = None,
        valid_to: datetime | None = None,
    ) -> Op:
        """``valid_to``: when it stopped holding, when the user said so (default: when
        it was said)."""
        return cls(
            "INVALIDATE", target=target, reason=reason, evidence=evidence, valid_from=valid_to
        )

    @classmethod
    def merge(
        cls,
        targets: Sequence[int | str],
        content: str,
        *,
        key: str | None = None,
        confidence: float | None = None,
        evidence: str | None = None,
        reason: str | None = None,
    ) -> Op:
        return cls(
            "MERGE",
            targets=tuple(targets),
            content=content,
            key=key,
            confidence=confidence,
            evidence=evidence,
            reason=reason,
        )


# Ops the secret screen (:func:`mem01session.extraction.hygiene.screen`) returned. Screening
# one again changes nothing, and validation need not scan it again. Weak: nothing is kept
# alive by being here.
_SCREENED: weakref.WeakSet[Op] = weakref.WeakSet()


def mark_screened(op: Op) -> None:
    """Record that ``op`` came out of the secret screen as it is."""
    with contextlib.suppress(TypeError):  # unhashable fields (a list of targets)
        _SCREENED.add(op)


def was_screened(op: Op) -> bool:
    """Whether ``op`` came out of the secret screen as it is."""
    try:
        return op in _SCREENED
    except TypeError:
        return False


@dataclass(frozen=True)
class Provenance:
    """Where a batch of ops came from; stored with every belief it creates or touches."""

    session_id: str | None = None
    item_ref: str | None = None
    observed_at: datetime | None = None
    extractor: str | None = None
    job_id: int | None = None
    extra: Mapping[str, str] = field(default_factory=dict)


def resolve_aliases(ops: Sequence[Op], aliases: Mapping[str, int]) -> list[Op]:
    """Replace candidate aliases (``"b1"``) with belief ids; unknown aliases reject the batch."""
    out: list[Op] = []
    for index, op in enumerate(ops):

        def one(ref: int | str | None, _index: int = index, _op: Op = op) -> int | None:
            if ref is None:
                return None
            if isinstance(ref, int):
                raise InvalidOpError(
                    _index, _op.op, "extractor ops must address candidates by alias, not by id"
                )
            if ref not in aliases:
                raise InvalidOpError(_index, _op.op, f"unknown candidate alias {ref!r}")
            return aliases[ref]

        target = one(op.target)
        targets = tuple(t for t in (one(t) for t in op.targets) if t is not None)
        resolved = replace(op, target=target, targets=targets)
        if was_screened(op):  # its text is unchanged
            mark_screened(resolved)
        out.append(resolved)
    return out
