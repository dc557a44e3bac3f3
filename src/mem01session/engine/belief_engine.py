"""``BeliefEngine``: the long-term tier's API over the read, write, erase and inspection modules."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TypeVar, cast

from ..db import Database
from ..embeddings import Embedder, Vector
from ..tokens import TokenCounter
from . import episodes, erase, group, inspection, read, users, write
from . import reembed as reembedding
from .engine_parts import Clock, EngineParts, utcnow
from .episodes import EpisodePolicy, Utterance
from .group import GroupHook
from .ops import Op, Provenance
from .read import SnapshotProbe
from .records import (
    ApplyResult,
    Belief,
    Episode,
    EraseReceipt,
    LedgerEvent,
    RecallRequest,
    RecallResult,
    ReembedReport,
    ScoredBelief,
    UserSummary,
)
from .write import Prepared, TransactionHook

T = TypeVar("T")


class BeliefEngine:
    """Durable, user-scoped beliefs with a lifecycle, provenance and recall.

    Every method takes ``user_id`` and touches that user's rows only. The engine does not
    own ``db``: whoever opened the database closes it (``Memory`` does).
    """

    def __init__(
        self,
        db: Database,
        embedder: Embedder,
        *,
        token_counter: TokenCounter | None = None,
        clock: Clock = utcnow,
        episodes: EpisodePolicy | None = None,
    ) -> None:
        self.parts = EngineParts(
            db,
            embedder,
            token_counter,  # None: the default, loaded when tokens are first counted
            clock,
            episodes if episodes is not None else EpisodePolicy(),
        )

    def __repr__(self) -> str:
        return f"BeliefEngine(db={self.db!r}, embedder={self.embedder.name!r})"

    @property
    def db(self) -> Database:
        return self.parts.db

    @property
    def embedder(self) -> Embedder:
        return self.parts.embedder

    @property
    def token_counter(self) -> TokenCounter:
        return self.parts.token_counter

    @property
    def episode_policy(self) -> EpisodePolicy:
        """Which messages this engine keeps as episodes, and for how long."""
        return self.parts.episodes

    def clock(self) -> datetime:
        """The engine's current time (time-zone aware)."""
        return self.parts.now()

    # -- write path -------------------------------------------------------------------

    async def apply(
        self,
        user_id: str,
        ops: Sequence[Op],
        *,
        provenance: Provenance,
        hook: TransactionHook | None = None,
        utterances: Sequence[Utterance] = (),
        vectors: Mapping[str, Vector] | None = None,
    ) -> ApplyResult:
        """Validate and apply a batch atomically; an invalid op rejects the whole batch.

        ``utterances``: the turn's messages; those :attr:`episode_policy` keeps are stored
        as episodes in the same transaction (``provenance`` must name the turn's job and
        conversation). ``hook`` runs inside the transaction, under the user's lock, after
        the ops are written; raising rolls the whole batch back. ``vectors``: statements or
        passages already embedded by :attr:`embedder` (see :meth:`episode_texts`).
        """
        return await write.apply_ops(
            self.parts, user_id, ops, provenance, hook, utterances, vectors
        )

    async def prepare(
        self,
        user_id: str,
        ops: Sequence[Op],
        *,
        provenance: Provenance,
        utterances: Sequence[Utterance] = (),
        vectors: Mapping[str, Vector] | None = None,
    ) -> Prepared:
        """Check and embed a batch for :meth:`apply_group` (as :meth:`apply` would; raises
        :class:`InvalidOpError` for an invalid op)."""
        return await write.prepare(
            self.parts, user_id, ops, provenance, utterances=utterances, vectors=vectors
        )

    async def apply_group(
        self, batches: Sequence[Prepared], hook: GroupHook | None = None
    ) -> list[ApplyResult]:
        """Write several users' prepared batches in one transaction, all or nothing
        (:mod:`.group`); ``hook`` runs in it, after the writes."""
        return await group.apply_group(self.parts, batches, hook)

    @property
    def groups_writes(self) -> bool:
        """Whether :meth:`apply_group` suits this database: not on a cluster distributed
        by user (its statements span users), nor before the first connection tells."""
        return self.db.direct.distributed is False

    def episode_texts(self, utterances: Sequence[Utterance]) -> list[str]:
        """The texts :meth:`apply` would embed for the episodes of these messages: the
        passages it keeps, and the contexts their vectors take a share of."""
        drafts = episodes.drafts(utterances, self.episode_policy, self.token_counter)
        return episodes.embedded(drafts)

    async def correct(
        self,
        user_id: str,
        belief_id: int,
        content: str,
        *,
        reason: str | None = None,
        provenance: Provenance | None = None,
    ) -> ApplyResult:
        """Replace a belief's statement (a SUPERSEDE recorded as a correction)."""
        return await write.correct(self.parts, user_id, belief_id, content, reason, provenance)

    async def forget(
        self,
        user_id: str,
        belief_id: int,
        reason: str = "forgotten on request",
        *,
        provenance: Provenance | None = None,
    ) -> ApplyResult:
        """Mark a belief as no longer true (an INVALIDATE); its text is kept in history.

        ``provenance`` says who asked (its ``extractor`` is recorded in the ledger);
        default ``Provenance(extractor="forget")``.
        """
        return await write.forget(self.parts, user_id, belief_id, reason, provenance)

    async def erase_user(self, user_id: str, *, tombstone: bool = True) -> EraseReceipt:
        """Hard-delete everything durable about the user, leave a tombstone (refusing later
        writes until :meth:`reinstate_user`), return a receipt. ``tombstone=False``: no
        trace is left, for a scratch user with no turn in flight (see
        :func:`~mem01session.engine.erase.erase_user`)."""
        return await erase.erase_user(self.parts, user_id, tombstone=tombstone)

    async def compact(self) -> list[str]:
        """Rewrite the memory tables so that their files no longer hold erased rows, and
        checkpoint (see :mod:`mem01session.engine.erase` for what erase guarantees with and
        without it). Locks each table while it is rewritten; returns the tables."""
        return await erase.compact(self.parts)

    async def reinstate_user(self, user_id: str) -> datetime | None:
        """Lift an erase tombstone so that new writes for the user are accepted again.

        Returns when the lifted erase happened; None (nothing changed) if the user was not
        erased. The erased memory does not come back.
        """
        return await erase.reinstate_user(self.parts, user_id)

    async def erased_at(self, user_id: str) -> datetime | None:
        """When the user's memory was erased, while writes are refused; else None."""
        return await users.erased_at(self.parts, user_id)

    async def user_timezone(self, user_id: str) -> str | None:
        """The IANA zone the user's sessions last gave (``Mem01Session(timezone=...)``,
        recorded with the turns they wrote; erasing the user forgets it); else None."""
        return await users.stored_timezone(self.parts, user_id)

    # -- inspection -------------------------------------------------------------------

    async def get(self, user_id: str, belief_id: int) -> Belief:
        """One belief with its sources; :class:`BeliefNotFoundError` if not the user's."""
        return await inspection.get_belief(self.db.direct, user_id, belief_id)

    async def history(
        self,
        user_id: str,
        *,
        include_inactive: bool = True,
        limit: int = 100,
        contains: str | None = None,
    ) -> list[Belief]:
        """The user's beliefs, oldest first (``valid_from``, then id); with ``contains``,
        only those whose statement contains it (ignoring case)."""
        return await inspection.history(self.db.direct, user_id, include_inactive, limit, contains)

    async def episodes(
        self,
        user_id: str,
        *,
        session_id: str | None = None,
        limit: int = 100,
        contains: str | None = None,
    ) -> list[Episode]:
        """The user's most recent episodes (what was said, hidden ones included), oldest
        first, each with the beliefs drawn from it; with ``session_id``, one conversation's;
        with ``contains``, those whose words contain it (ignoring case)."""
        return await inspection.episodes(self.db.direct, user_id, session_id, limit, contains)

    async def episode(self, user_id: str, episode_id: int) -> Episode:
        """One episode with the beliefs drawn from it; :class:`EpisodeNotFoundError` if not
        the user's."""
        return await inspection.get_episode(self.db.direct, user_id, episode_id)

    async def keyed(self, user_id: str, *, limit: int = 50) -> list[Belief]:
        """Active beliefs with a key (``home.city``…), newest first: extractor candidates."""
        return await inspection.keyed(self.db.direct, user_id, limit)

    async def ledger(
        self, user_id: str, *, belief_id: int | None = None, limit: int = 200
    ) -> list[LedgerEvent]:
        """Ledger events, oldest first, optionally for one belief."""
        return await inspection.ledger(self.db.direct, user_id, belief_id, limit)

    async def users(self, *, contains: str | None = None, limit: int = 200) -> list[UserSummary]:
        """Users with durable memory, erased ones included, most recently changed first
        (the one read across users); with ``contains``, only user ids containing it."""
        return await inspection.users(self.db.direct, contains, limit)

    async def user(self, user_id: str) -> UserSummary | None:
        """The user's summary (version, erase tombstone, belief counts); None if unknown."""
        return await inspection.user_summary(self.db.direct, user_id)

    async def user_version(self, user_id: str) -> int:
        """Monotonic counter bumped by every applied batch (0 for an unknown user)."""
        return await inspection.user_version(self.db.direct, user_id)

    async def reembed(
        self,
        *,
        user_id: str | None = None,
        batch_size: int = 64,
        progress: reembedding.Progress | None = None,
    ) -> ReembedReport:
        """Give every belief whose vector another model made a vector of this engine's
        embedder (safe while the application runs; resumable)."""
        return await reembedding.reembed(
            self.parts, user_id=user_id, batch_size=batch_size, progress=progress
        )

    async def count_other_model(self, user_id: str | None = None) -> int:
        """Beliefs whose vectors another model made (found by full text only until
        :meth:`reembed` converts them)."""
        return await reembedding.count_other_model(self.parts, user_id)

    # -- read path --------------------------------------------------------------------

    async def search(
        self,
        user_id: str,
        request: RecallRequest | str,
        *,
        limit: int = 10,
        vector: Vector | None = None,
        sources: bool = True,
    ) -> list[ScoredBelief]:
        """Ranked beliefs for a request (or a plain query) without rendering. ``vector``:
        the query's, already embedded by :attr:`embedder`; ``sources=False`` leaves each
        belief's sources unread (cheaper)."""
        return await read.rank(
            self.parts, user_id, _request(request), limit, vector=vector, sources=sources
        )

    async def recall(self, user_id: str, request: RecallRequest | str) -> RecallResult:
        """The memory block for a request (or a plain query, 800 tokens)."""
        result, _ = await read.read_block(self.parts, user_id, _request(request))
        return result

    async def recall_probed(
        self, user_id: str, request: RecallRequest, probe: SnapshotProbe[T]
    ) -> tuple[RecallResult, T]:
        """:meth:`recall` plus ``probe``'s value, read in the same snapshot."""
        result, value = await read.read_block(self.parts, user_id, request, probe)
        return result, cast(T, value)

    def reframe(self, result: RecallResult, request: RecallRequest) -> RecallResult:
        """``result`` (a recall's) rendered again with the header notes ``request`` now
        carries (``newer_turns``, ``pending_turns``), within its budget; no database read."""
        return read.reframe(self.parts, result, request)


def _request(request: RecallRequest | str) -> RecallRequest:
    return request if isinstance(request, RecallRequest) else RecallRequest(request)
