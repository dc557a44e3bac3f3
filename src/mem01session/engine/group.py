"""Several users' batches written in one transaction (a group commit).

The worker applies many turns, each of another user; one transaction per turn costs a
dozen statements that are the same for every turn (the lock, the user's row, the
episodes and their word counts, the version, the job's completion, ``BEGIN`` and
``COMMIT``), and on a busy worker the CPU spent sending and reading statements bounds its
throughput. A group sends each of those once for all its turns; the ops themselves are
applied per user, in order, exactly as :func:`~.write.apply_ops` does.

Everything :func:`~.write.apply_ops` promises holds per group: the users' locks (taken in
one order by every group, so two groups never wait for each other in a circle), the
erased-user refusal, the target checks, ops and episodes written whole or not at all. A
group is all or nothing: any error (an erased user, a missing target, a job no longer
leased) rolls every turn of it back, and the caller applies them one by one, where each
turn meets its own error alone.

Statements over several users at once are not for a cluster distributed by ``user_id``
(each would cross shards): :attr:`~mem01session.db.direct.DirectPool.distributed` tells.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime

from ..errors import ConfigError
from . import episodes, near, terms
from .batch import Batch
from .engine_parts import EngineParts
from .records import ApplyResult, Change
from .tx import Tx, transaction
from .users import bump_versions, lock_users, open_users, opened_users, zone_of
from .validate import judge_targets, look_up_targets_of_users, rows_by_user
from .write import Prepared, TxHook, apply_prepared, prune, said_at, write_ops

_COUNT_TERMS_UP = terms.count_up_many("belief_terms")
_COUNT_TERMS_DOWN = terms.count_down_many("belief_terms")

GroupHook = Callable[[Tx], Awaitable[None]]
"""Runs in the group's transaction after every turn's writes (the job queue marks the
turns' jobs done); raising rolls the whole group back."""


async def apply_group(
    parts: EngineParts, batches: Sequence[Prepared], hook: GroupHook | None = None
) -> list[ApplyResult]:
    """Write ``batches`` (from :func:`~.write.prepare`, each of another user) in one
    transaction; their results in the same order. Raises what the first failing batch
    raises, and then nothing of any batch was written."""
    users = [b.user_id for b in batches]
    if len(set(users)) != len(users):
        raise ConfigError("a group holds at most one batch per user")
    if not batches:
        return []
    if len(batches) == 1:  # the statements for one user (those a cluster routes)
        return [await apply_prepared(parts, batches[0], TxHook(hook) if hook else None)]

    async def write(tx: Tx) -> list[ApplyResult]:
        now = parts.now()
        await lock_users(tx, users)
        opened = await open_users(tx, users, now)
        targets = await look_up_targets_of_users(tx, [(b.user_id, b.checked) for b in batches])
        stored = await episodes.insert_many(
            tx, [_turn(b, now) for b in batches if b.drafts], model=parts.embedder.name, now=now
        )
        kept = iter(stored)
        turns = [next(kept) if b.drafts else ([], 0) for b in batches]
        versions = await opened_users(opened)
        found = await rows_by_user(targets)
        for b in batches:
            judge_targets(found.get(b.user_id, {}), b.checked)
        written: list[tuple[Batch, tuple[Change, ...]]] = []
        for b, (episodes_of_turn, _) in zip(batches, turns, strict=True):
            known = found.get(b.user_id, {})
            written.append(await write_ops(parts, tx, b, episodes_of_turn, now, known))
        await _finish(tx, [batch for batch, _ in written])
        counts = {}
        for b, (batch, changed), (episodes_of_turn, added) in zip(
            batches, written, turns, strict=True
        ):
            pruned = await prune(parts, tx, b.user_id, now)
            if changed or episodes_of_turn or pruned:
                counts[b.user_id] = (added, batch.active_delta, zone_of(b.provenance.observed_at))
        bumped = await bump_versions(tx, now, counts) if counts else None
        if hook is not None:
            await hook(tx)
        if bumped is not None:
            versions |= {str(r["user_id"]): int(r["version"]) for r in await bumped.rows()}
        return [
            ApplyResult(changed, versions[b.user_id])
            for b, (_, changed) in zip(batches, written, strict=True)
        ]

    return await transaction(parts.db.direct, write)


def _turn(b: Prepared, now: datetime) -> episodes.TurnEpisodes:
    p = b.provenance
    assert p.job_id is not None and p.session_id  # checked by prepare()
    return episodes.TurnEpisodes(
        b.user_id, p.session_id, p.job_id, said_at(b, now), b.drafts, b.episode_vectors
    )


async def _finish(tx: Tx, batches: Sequence[Batch]) -> None:
    """:meth:`~.batch.Batch.finish` for several users' batches: a statement of each kind
    for all of them."""
    await near.link_many(
        tx,
        [(b.user_id, i) for b in batches for i in b.embedded],
        anew=[(b.user_id, i) for b in batches for i in b.reembedded],
    )
    up = [(b.user_id, t) for b in batches for t in b.activated]
    down = [(b.user_id, t) for b in batches for t in b.deactivated]
    for sql, pairs in ((_COUNT_TERMS_UP, up), (_COUNT_TERMS_DOWN, down)):
        if pairs:
            await tx.run(sql, {"users": [u for u, _ in pairs], "texts": [t for _, t in pairs]})
