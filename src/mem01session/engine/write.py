"""The write path: apply a validated batch of lifecycle ops atomically under the user's lock.

One transaction per batch: lock the user, refuse an erased user, check the targets,
write the turn's episodes (what was said, :mod:`.episodes`), apply the ops in order (each
with a ledger row, each resulting belief with a provenance row pointing at its episode),
delete episodes past their retention, bump the user's version, run the caller's hook,
commit.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncConnection

from ..checks import aware, check_id
from ..db.vectors import BinaryVector
from ..embeddings import Vector
from ..errors import BeliefNotFoundError, ConfigError
from . import episodes
from .batch import Batch
from .engine_parts import EngineParts
from .episodes import Utterance
from .ops import Op, Provenance
from .records import ApplyResult, Change
from .tx import Row, Tx, transaction
from .users import bump_version, lock_user, open_user, opened, zone_of
from .validate import (
    CheckedOp,
    TargetNotFoundError,
    check_ops,
    check_provenance,
    check_targets,
    look_up_targets,
)

TransactionHook = Callable[[AsyncConnection], Awaitable[None]]
"""Runs inside the apply transaction, under the user's lock, after the ops are written.
Raising rolls the whole batch back (the job queue marks its job done this way)."""


class TxHook:
    """A :data:`TransactionHook` whose statements run on the apply transaction's own
    connection (a :class:`~.tx.Tx`): the transaction then needs no SQLAlchemy connection,
    and runs pipelined on the direct pool (:func:`~.tx.transaction`). The job queue's hooks
    are of this kind; any other hook gets a SQLAlchemy connection."""

    def __init__(self, run: Callable[[Tx], Awaitable[None]]) -> None:
        self.run = run

    async def __call__(self, conn: AsyncConnection) -> None:
        await self.run(await Tx.of(conn))


async def apply_ops(
    parts: EngineParts,
    user_id: str,
    ops: Sequence[Op],
    provenance: Provenance,
    hook: TransactionHook | None = None,
    utterances: Sequence[Utterance] = (),
    vectors: Mapping[str, Vector] | None = None,
) -> ApplyResult:
    """Validate ``ops`` and apply them in one transaction; any invalid op rejects all.

    ``utterances`` are the turn's messages: those the episode policy keeps are stored as
    episodes in the same transaction (they need ``provenance.job_id``, the turn's job, and
    are dated ``provenance.observed_at``), and the beliefs the ops touch point at them.
    ``vectors``: texts already embedded by ``parts.embedder`` (the worker embeds a batch
    of turns at once); any other statement or passage is embedded here.

    Raises :class:`InvalidOpError` (nothing changed), :class:`UserErasedError`, or
    whatever ``hook`` raises (nothing changed either). An empty batch without episodes
    changes nothing and leaves the version alone, but still runs ``hook`` under the lock.
    """
    return await _apply(
        parts, user_id, ops, provenance, hook, utterances=utterances, vectors=vectors
    )


async def correct(
    parts: EngineParts,
    user_id: str,
    belief_id: int,
    content: str,
    reason: str | None = None,
    provenance: Provenance | None = None,
) -> ApplyResult:
    """Replace an active belief's statement: a SUPERSEDE recorded as ``CORRECT``."""
    op = Op.supersede(belief_id, content, reason=reason or "corrected")
    try:
        return await _apply(
            parts,
            user_id,
            [op],
            provenance or Provenance(extractor="correction"),
            None,
            record_as="CORRECT",
        )
    except TargetNotFoundError as exc:
        raise BeliefNotFoundError(f"cannot correct: {exc.reason}") from None


async def forget(
    parts: EngineParts,
    user_id: str,
    belief_id: int,
    reason: str,
    provenance: Provenance | None = None,
) -> ApplyResult:
    """Mark an active belief as no longer true: an INVALIDATE recorded as ``FORGET``."""
    op = Op.invalidate(belief_id, reason)
    try:
        return await _apply(
            parts,
            user_id,
            [op],
            provenance or Provenance(extractor="forget"),
            None,
            record_as="FORGET",
        )
    except TargetNotFoundError as exc:
        raise BeliefNotFoundError(f"cannot forget: {exc.reason}") from None


@dataclass(frozen=True)
class Prepared:
    """A batch checked and embedded, ready to write (:func:`prepare`)."""

    user_id: str
    provenance: Provenance
    checked: tuple[CheckedOp, ...]
    drafts: tuple[episodes.Draft, ...]
    vectors: Mapping[str, BinaryVector]  # statement -> its vector
    episode_vectors: tuple[BinaryVector, ...] = ()  # one per draft (episodes.vector_of)
    record_as: str | None = None


async def prepare(
    parts: EngineParts,
    user_id: str,
    ops: Sequence[Op],
    provenance: Provenance,
    *,
    record_as: str | None = None,
    utterances: Sequence[Utterance] = (),
    vectors: Mapping[str, Vector] | None = None,
) -> Prepared:
    """Check a batch and embed what it writes, outside any transaction (embedding may be
    a network call: never while the user's lock is held). Raises :class:`InvalidOpError`."""
    user_id = check_id("user_id", user_id)
    check_provenance(provenance)
    checked = check_ops(ops)
    drafts = episodes.drafts(utterances, parts.episodes, parts.token_counter)
    if drafts and (provenance.job_id is None or not provenance.session_id):
        raise ConfigError(
            "episodes need the turn's job and conversation (provenance.job_id, session_id)"
        )
    statements = list(
        dict.fromkeys(c.content for c in checked if c.content and c.kind != "INVALIDATE")
    )
    texts = list(dict.fromkeys([*statements, *episodes.embedded(drafts)]))
    known = vectors or {}
    missing = [t for t in texts if t not in known]
    computed = await parts.embedder.embed(missing) if missing else []
    if len(computed) != len(missing):
        raise RuntimeError(f"embedder returned {len(computed)} vectors for {len(missing)} texts")
    found = {
        **{t: known[t] for t in texts if t in known},
        **dict(zip(missing, computed, strict=True)),
    }
    params = {t: BinaryVector(found[t]) for t in statements}
    quoted = tuple(BinaryVector(episodes.vector_of(d, found)) for d in drafts)
    return Prepared(user_id, provenance, tuple(checked), tuple(drafts), params, quoted, record_as)


async def _apply(
    parts: EngineParts,
    user_id: str,
    ops: Sequence[Op],
    provenance: Provenance,
    hook: TransactionHook | None,
    *,
    record_as: str | None = None,
    utterances: Sequence[Utterance] = (),
    vectors: Mapping[str, Vector] | None = None,
) -> ApplyResult:
    p = await prepare(
        parts,
        user_id,
        ops,
        provenance,
        record_as=record_as,
        utterances=utterances,
        vectors=vectors,
    )
    return await apply_prepared(parts, p, hook)


async def apply_prepared(
    parts: EngineParts, p: Prepared, hook: TransactionHook | None = None
) -> ApplyResult:
    """Write a batch :func:`prepare` made, in one transaction under the user's lock."""
    user_id, checked = p.user_id, p.checked

    async def write(tx: Tx, on_tx: Callable[[Tx], Awaitable[None]] | None) -> ApplyResult:
        # (Read before the lock is granted: pipelined, the lock is only sent before the
        # user's row is read, in the same round trip.)
        now = parts.now()
        await lock_user(tx, user_id)
        # Sent together; read in the order that says an erased user before a missing target.
        user = await open_user(tx, user_id, now)
        targets = await look_up_targets(tx, user_id, checked)
        stored, added = await _store_episodes(parts, tx, p, now)
        version = await opened(user)
        known = await check_targets(targets, checked)
        batch, changes = await write_ops(parts, tx, p, stored, now, known)
        await batch.finish()
        pruned = await prune(parts, tx, user_id, now)
        bumped = None
        if changes or stored or pruned:
            bumped = await bump_version(
                tx,
                user_id,
                now,
                episodes=added,
                active=batch.active_delta,
                timezone=zone_of(p.provenance.observed_at),
            )
        if on_tx is not None:
            await on_tx(tx)
        if bumped is not None:
            version = int((await bumped.one())["version"])
        return ApplyResult(changes, version)

    if hook is None or isinstance(hook, TxHook):
        # On the direct pool, pipelined (see .tx).
        on_tx = hook.run if hook is not None else None
        return await transaction(parts.db.direct, lambda tx: write(tx, on_tx))
    async with parts.db.sa_engine.begin() as conn:
        result = await write(await Tx.of(conn), None)
        await hook(conn)
    return result


async def write_ops(
    parts: EngineParts,
    tx: Tx,
    p: Prepared,
    stored: Sequence[episodes.Stored],
    now: datetime,
    known: Mapping[int, Row],
) -> tuple[Batch, tuple[Change, ...]]:
    """Apply ``p``'s ops in order (under the user's lock, targets checked: ``known``, their
    rows); the batch, to be finished, and what each op changed."""
    batch = Batch(tx, p.user_id, p.provenance, now, p.vectors, p.record_as, parts.embedder.name)
    batch.known = dict(known)
    batch.episode_of = lambda evidence: episodes.source_episode(stored, evidence)
    return batch, tuple([await batch.apply(c) for c in p.checked])


async def prune(parts: EngineParts, tx: Tx, user_id: str, now: datetime) -> int:
    """Delete the user's episodes past their retention, if the policy has one."""
    oldest = parts.episodes.oldest(now)
    return await episodes.prune(tx, user_id, oldest) if oldest is not None else 0


async def _store_episodes(
    parts: EngineParts, tx: Tx, p: Prepared, now: datetime
) -> tuple[list[episodes.Stored], int]:
    if not p.drafts:
        return [], 0
    provenance = p.provenance
    assert provenance.job_id is not None and provenance.session_id  # checked before
    return await episodes.insert(
        tx,
        p.user_id,
        p.drafts,
        session_id=provenance.session_id,
        job_id=provenance.job_id,
        said_at=said_at(p, now),
        vectors=p.episode_vectors,
        model=parts.embedder.name,
        now=now,
    )


def said_at(p: Prepared, now: datetime) -> datetime:
    """When the batch's turn was said (its episodes' date)."""
    observed = p.provenance.observed_at
    return aware(observed) if observed else now
