"""Applying checked ops, in order, inside the batch's open transaction.

Each op writes a ledger row (its ``after`` snapshot names the provenance's extractor);
each belief it creates, revises or confirms gets a provenance row (pointing at the turn's
episode, when one was kept). A restatement of an active belief never creates a duplicate:
ADD confirms it, SUPERSEDE and MERGE hand over to it, UPDATE is rejected. A forgotten
belief takes the episodes it was drawn from out of recall.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from ..checks import aware
from ..db.vectors import BinaryVector
from ..errors import InvalidOpError
from . import late, near, terms
from .episodes import hide_sources_of
from .ops import Provenance
from .records import Change, normalize_content
from .row_mapping import BELIEF_COLUMNS, snapshot
from .tx import Tx
from .validate import CheckedOp

DEFAULT_CONFIDENCE = 0.8
# How much a restatement raises confidence (capped at 1).
CONFIRM_BOOST = 0.05

Row = Mapping[Any, Any]


_COUNT_TERMS_UP = terms.count_up("belief_terms")
_COUNT_TERMS_DOWN = terms.count_down("belief_terms")


class Batch:
    """Applies checked ops, in order, inside one open transaction."""

    def __init__(
        self,
        tx: Tx,
        user_id: str,
        provenance: Provenance,
        now: datetime,
        vectors: Mapping[str, BinaryVector],
        record_as: str | None,
        model: str,
    ) -> None:
        self.tx = tx
        self.user_id = user_id
        self.provenance = provenance
        self.now = now
        self.observed_at = aware(provenance.observed_at) if provenance.observed_at else now
        self.vectors = vectors  # content -> its vector, made by ``model``
        self.record_as = record_as
        self.model = model
        # Statements that became active, and that stopped being active: the user's term
        # counts follow them (see finish(); a group's finish reads them, .group).
        self.activated: list[str] = []
        self.deactivated: list[str] = []
        # Beliefs given a vector, and those among them that had one (see near.link).
        self.embedded: list[int] = []
        self.reembedded: list[int] = []
        # Rows read before the ops (the targets' look-up), until an op changes them.
        self.known: dict[int, Row] = {}
        # The episode of this turn a belief drawn from ``evidence`` points at.
        self.episode_of: Callable[[str | None], int | None] = lambda _evidence: None

    async def apply(self, c: CheckedOp) -> Change:
        # A dated turn's op on a belief said after that turn (.late); a correction or a
        # forget is a decision made now about the belief it names, never late.
        if c.target is not None and self.provenance.observed_at and self.record_as is None:
            current = await self._load(c.target)
            if late.said_after(current, self.observed_at):
                return await self._late(c, current)
        if c.kind == "ADD":
            return await self._add(c)
        if c.kind == "UPDATE":
            return await self._update(c)
        if c.kind == "SUPERSEDE":
            return await self._supersede(c)
        if c.kind == "INVALIDATE":
            return await self._invalidate(c)
        return await self._merge(c)

    def _at(self, c: CheckedOp) -> datetime:
        """When the op's fact started (or stopped) holding."""
        return c.valid_from or self.observed_at

    # -- ops -------------------------------------------------------------------------

    async def _add(self, c: CheckedOp) -> Change:
        assert c.content is not None
        new = await self._insert(c, c.key, _or(c.confidence, DEFAULT_CONFIDENCE), exclude=())
        if new is not None:
            await self._ledger("ADD", new, (), None, c.reason)
            return Change("ADD", int(new["id"]))
        existing = await self._restated(c.content, exclude=())
        before = snapshot(existing)
        after = await self._confirm(existing, c)
        await self._ledger("CONFIRM", after, (), before, c.reason)
        return Change("CONFIRM", int(after["id"]))

    async def _update(self, c: CheckedOp) -> Change:
        assert c.target is not None
        old = await self._load(c.target)
        sets = ["version = version + 1", "updated_at = :now"]
        params: dict[str, object] = {"now": self.now}
        if c.content is not None:
            duplicate = await self._active_with_content(c.content, exclude=(c.target,))
            if duplicate is not None:
                raise InvalidOpError(
                    c.index,
                    c.kind,
                    f"the new content restates active belief #{duplicate['id']}; use MERGE",
                )
            sets += [
                "content = :content",
                "norm_content = :norm",
                "embedding = CAST(:v AS vector)",
                "embedding_model = :model",
            ]
            params |= {
                "content": c.content,
                "norm": normalize_content(c.content),
                "v": self.vectors[c.content],
                "model": self.model,
            }
        if c.confidence is not None:
            sets.append("confidence = :confidence")
            params["confidence"] = c.confidence
        if c.key is not None:
            sets.append("key = :key")
            params["key"] = c.key
        new = await self._update_row(c.target, ", ".join(sets), params)
        if c.content is not None:
            self.deactivated.append(str(old["content"]))
            self.activated.append(c.content)
            self.embedded.append(c.target)
            self.reembedded.append(c.target)
        await self._add_source(c.target, c.evidence)
        await self._ledger("UPDATE", new, (), snapshot(old), c.reason)
        return Change("UPDATE", c.target)

    async def _supersede(self, c: CheckedOp) -> Change:
        target = c.target
        assert target is not None
        old = await self._load(target)
        if self._at(c) < old["valid_from"]:
            # The change is said to predate the belief it replaces ("I live in NYC" on
            # Monday, "I moved last weekend" on Wednesday): the successor starts where the
            # old belief began, so that the two intervals meet instead of overlapping.
            c = replace(c, valid_from=old["valid_from"])
        successor = await self._successor(
            c, c.key or old["key"], _or(c.confidence, DEFAULT_CONFIDENCE), exclude=(target,)
        )
        succ_id = int(successor["id"])
        await self._retire(
            [old], "superseded", self._at(c), "superseded_by = :link", {"link": succ_id}
        )
        op = self.record_as or "SUPERSEDE"
        await self._ledger(op, successor, (target,), snapshot(old), c.reason)
        return Change(op, succ_id, (target,))

    async def _late(self, c: CheckedOp, current: Row) -> Change:
        """Apply an op of a turn said before ``current`` was (:mod:`.late`): ``current``
        stays; the op's statement becomes its history, or confirms the active belief that
        states it. ``KEPT``: nothing was written."""
        if c.content is None:  # an INVALIDATE, a confidence: the later word stands
            return Change("KEPT", int(current["id"]))
        row = await late.insert_history(
            self.tx,
            self.user_id,
            current,
            c.content,
            key=c.key,
            confidence=_or(c.confidence, DEFAULT_CONFIDENCE),
            valid_from=self._at(c),
            vector=self.vectors[c.content],
            model=self.model,
            now=self.now,
        )
        if row is None:  # it restates an active belief
            existing = await self._restated(c.content, exclude=())
            after = await self._confirm(existing, c)
            await self._ledger("CONFIRM", after, (), snapshot(existing), c.reason)
            return Change("CONFIRM", int(after["id"]))
        self.embedded.append(int(row["id"]))
        await self._add_source(int(row["id"]), c.evidence)
        # In the ledger as any replaced belief is: ``current`` superseding it.
        reason = f"said before belief #{current['id']}: kept as its history"
        await self._ledger("SUPERSEDE", current, (int(row["id"]),), snapshot(row), reason)
        return Change("HISTORY", int(row["id"]))

    async def _invalidate(self, c: CheckedOp) -> Change:
        assert c.target is not None
        old = await self._load(c.target)
        await self._retire([old], "invalidated", self._at(c), "", {})
        new = await self._load(c.target)
        if self.record_as == "FORGET":
            await hide_sources_of(self.tx, self.user_id, c.target, self.now)
        op = self.record_as or "INVALIDATE"
        extra = {"evidence": c.evidence} if c.evidence else {}
        await self._ledger(op, new, (), snapshot(old), c.reason, extra)
        return Change(op, c.target, (c.target,))

    async def _merge(self, c: CheckedOp) -> Change:
        sources = [await self._load(t) for t in c.targets]
        key = c.key or next((s["key"] for s in sources if s["key"] is not None), None)
        confidence = _or(c.confidence, max(float(s["confidence"]) for s in sources))
        canonical = await self._successor(c, key, confidence, exclude=c.targets)
        canon_id = int(canonical["id"])
        await self._retire(
            sources, "merged", self._at(c), "merged_into = :link", {"link": canon_id}
        )
        await self.tx.run(
            "INSERT INTO belief_sources (user_id, belief_id, session_id, item_ref, evidence, "
            "observed_at, extractor, job_id, episode_id, created_at) "
            "SELECT user_id, :canon, session_id, item_ref, evidence, observed_at, extractor, "
            "job_id, episode_id, :now FROM belief_sources "
            "WHERE user_id = :u AND belief_id = ANY(CAST(:ids AS bigint[])) "
            "ORDER BY observed_at, id",
            {"u": self.user_id, "canon": canon_id, "now": self.now, "ids": list(c.targets)},
        )
        before = {"sources": [snapshot(s) for s in sources]}
        await self._ledger("MERGE", canonical, c.targets, before, c.reason)
        return Change("MERGE", canon_id, c.targets)

    # -- building blocks -------------------------------------------------------------

    async def _successor(
        self, c: CheckedOp, key: str | None, confidence: float, *, exclude: tuple[int, ...]
    ) -> Row:
        """The belief that carries ``c.content`` on: a new one, or an active restatement."""
        new = await self._insert(c, key, confidence, exclude=exclude)
        if new is not None:
            return new
        assert c.content is not None
        return await self._confirm(await self._restated(c.content, exclude=exclude), c)

    async def _insert(
        self, c: CheckedOp, key: str | None, confidence: float, *, exclude: Sequence[int]
    ) -> Row | None:
        """Insert ``c.content`` as a new active belief, unless an active belief (other
        than ``exclude``) already states it: then None (one statement either way)."""
        assert c.content is not None
        norm = normalize_content(c.content)
        row = await self.tx.row(
            "INSERT INTO beliefs (user_id, content, norm_content, key, status, "
            "confidence, valid_from, created_at, updated_at, version, embedding, "
            "embedding_model) "
            "SELECT :u, :content, :norm, :key, 'active', :confidence, :valid_from, "
            ":now, :now, 1, CAST(:v AS vector), :model "
            "WHERE NOT EXISTS (SELECT 1 FROM beliefs WHERE user_id = :u "
            "AND status = 'active' AND norm_content = :norm "
            "AND id <> ALL(CAST(:exclude AS bigint[]))) "
            f"RETURNING {BELIEF_COLUMNS}",
            {
                "u": self.user_id,
                "content": c.content,
                "norm": norm,
                "key": key,
                "confidence": confidence,
                "valid_from": self._at(c),
                "now": self.now,
                "v": self.vectors[c.content],
                "model": self.model,
                "exclude": list(exclude),
            },
        )
        if row is None:
            return None
        self.activated.append(c.content)
        self.embedded.append(int(row["id"]))
        await self._add_source(int(row["id"]), c.evidence)
        return row

    async def _confirm(self, existing: Row, c: CheckedOp) -> Row:
        """Record a restatement of an active belief: confidence up, provenance added."""
        old = float(existing["confidence"])
        confidence = min(1.0, max(old, _or(c.confidence, old)) + CONFIRM_BOOST)
        belief_id = int(existing["id"])
        row = await self._update_row(
            belief_id,
            "confidence = :confidence, last_confirmed_at = :now, updated_at = :now, "
            "key = COALESCE(key, :key)",
            {"confidence": confidence, "now": self.now, "key": c.key},
        )
        await self._add_source(belief_id, c.evidence)
        return row

    async def _retire(
        self,
        rows: Sequence[Row],
        status: str,
        at: datetime,
        link_sql: str,
        link_params: Mapping[str, object],
    ) -> None:
        """Retire the active beliefs ``rows`` (as loaded in this batch)."""
        ids = [int(row["id"]) for row in rows]
        for belief_id in ids:
            self.known.pop(belief_id, None)
        # valid_to never precedes valid_from, whatever time the op claims.
        link = f", {link_sql}" if link_sql else ""
        await self.tx.run(
            "UPDATE beliefs SET status = :status, valid_to = GREATEST(:at, valid_from), "
            f"updated_at = :now{link} WHERE user_id = :u AND id = ANY(CAST(:ids AS bigint[]))",
            {"u": self.user_id, "ids": ids, "status": status, "at": at, "now": self.now}
            | dict(link_params),
        )
        self.deactivated += [str(row["content"]) for row in rows]

    @property
    def active_delta(self) -> int:
        """How many more beliefs of the user are active after this batch (the caller
        counts it with the version: :func:`~.users.bump_version`)."""
        return len(self.activated) - len(self.deactivated)

    async def finish(self) -> None:
        """Bring the user's term counts (what recall's word rarity rests on) up to date with
        the statements this batch made active and retired, and link the beliefs it gave a
        vector to their near-duplicates; call once, after the ops."""
        await near.link(self.tx, self.user_id, self.embedded, anew=self.reembedded)
        if self.activated:
            await self.tx.run(_COUNT_TERMS_UP, {"u": self.user_id, "texts": self.activated})
        if self.deactivated:
            await self.tx.run(_COUNT_TERMS_DOWN, {"u": self.user_id, "texts": self.deactivated})

    async def _active_with_content(self, content: str, *, exclude: Sequence[int]) -> Row | None:
        return await self.tx.row(
            f"SELECT {BELIEF_COLUMNS} FROM beliefs WHERE user_id = :u "
            "AND status = 'active' AND norm_content = :norm "
            "AND id <> ALL(CAST(:exclude AS bigint[])) ORDER BY id LIMIT 1",
            {"u": self.user_id, "norm": normalize_content(content), "exclude": list(exclude)},
        )

    async def _restated(self, content: str, *, exclude: Sequence[int]) -> Row:
        """The active belief whose statement kept :meth:`_insert` from inserting (under
        the user's lock it is still there)."""
        row = await self._active_with_content(content, exclude=exclude)
        if row is None:
            raise RuntimeError("an active belief stating the content vanished under the lock")
        return row

    async def _load(self, belief_id: int) -> Row:
        known = self.known.get(belief_id)
        if known is not None:
            return known
        return await self.tx.one(
            f"SELECT {BELIEF_COLUMNS} FROM beliefs WHERE user_id = :u AND id = :id",
            {"u": self.user_id, "id": belief_id},
        )

    async def _update_row(self, belief_id: int, sets: str, params: Mapping[str, object]) -> Row:
        self.known.pop(belief_id, None)
        return await self.tx.one(
            f"UPDATE beliefs SET {sets} WHERE user_id = :u AND id = :id RETURNING {BELIEF_COLUMNS}",
            {"u": self.user_id, "id": belief_id} | dict(params),
        )

    async def _add_source(self, belief_id: int, evidence: str | None) -> None:
        p = self.provenance
        await self.tx.run(
            "INSERT INTO belief_sources (user_id, belief_id, session_id, item_ref, evidence, "
            "observed_at, extractor, job_id, episode_id, created_at) VALUES (:u, :b, "
            ":session_id, :item_ref, :evidence, :observed_at, :extractor, :job_id, "
            ":episode_id, :now)",
            {
                "u": self.user_id,
                "b": belief_id,
                "session_id": p.session_id,
                "item_ref": p.item_ref,
                "evidence": evidence,
                "observed_at": self.observed_at,
                "extractor": p.extractor,
                "job_id": p.job_id,
                "episode_id": self.episode_of(evidence),
                "now": self.now,
            },
        )

    async def _ledger(
        self,
        op: str,
        belief: Row,
        related: Sequence[int],
        before: Mapping[str, object] | None,
        reason: str | None,
        extra: Mapping[str, object] | None = None,
    ) -> None:
        after = snapshot(belief) | dict(extra or {})
        if self.provenance.extractor:
            # Who made the change: an INVALIDATE or FORGET writes no provenance row, and a
            # correction has no job, so the ledger itself must say (see LedgerEvent.source).
            after["extractor"] = self.provenance.extractor
        if self.provenance.session_id:
            after["session_id"] = self.provenance.session_id  # and in which conversation
        await self.tx.run(
            "INSERT INTO belief_events (user_id, op, belief_id, related_ids, before, after, "
            "reason, job_id, created_at) VALUES (:u, :op, :b, CAST(:related AS bigint[]), "
            "CAST(:before AS jsonb), CAST(:after AS jsonb), :reason, :job_id, :now)",
            {
                "u": self.user_id,
                "op": op,
                "b": int(belief["id"]),
                "related": list(related),
                "before": json.dumps(before) if before is not None else None,
                "after": json.dumps(after),
                "reason": reason,
                "job_id": self.provenance.job_id,
                "now": self.now,
            },
        )


def _or(value: float | None, default: float) -> float:
    return default if value is None else value
