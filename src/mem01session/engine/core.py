"""``BeliefEngine``: one object holding the database and the embedder."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime

from sqlalchemy.ext.asyncio import AsyncConnection

from ..config import Settings
from ..db import Database
from ..embeddings import Embedder, default_embedder
from ..ops import Op, Provenance
from ..records import (
    ApplyResult,
    Belief,
    EraseReceipt,
    JobProgress,
    LedgerEvent,
    RecallResult,
    ScoredBelief,
)
from ..tokens import TokenCounter, default_token_counter
from . import erase, inspection, users, write
from .recall import recall, recall_with_progress, search

# Runs inside the apply transaction, under the user's lock, after the ops are written.
# Raising rolls the whole batch back (the session uses it to mark its job done atomically).
TransactionHook = Callable[[AsyncConnection], Awaitable[None]]
Clock = Callable[[], datetime]


def utcnow() -> datetime:
    return datetime.now(UTC)


class BeliefEngine:
    """Durable, user-scoped beliefs with a lifecycle, provenance and recall.

    Every method takes ``user_id`` and touches that user's rows only.
    """

    def __init__(
        self,
        db: Database,
        embedder: Embedder,
        *,
        token_counter: TokenCounter | None = None,
        clock: Clock = utcnow,
        owns_db: bool = False,
    ) -> None:
        self.db = db
        self.embedder = embedder
        self.token_counter = token_counter or default_token_counter()
        self.clock = clock
        self._owns_db = owns_db

    def __repr__(self) -> str:
        return f"BeliefEngine(db={self.db!r}, embedder={self.embedder.name!r})"

    @classmethod
    async def open(
        cls,
        settings: Settings | None = None,
        *,
        url: str | None = None,
        embedder: Embedder | None = None,
        auto_migrate: bool | None = None,
        clock: Clock = utcnow,
    ) -> BeliefEngine:
        """Open the configured database (embedded by default) with the configured embedder."""
        settings = settings or Settings.from_env()
        embedder = embedder or default_embedder(settings)
        db = await Database.open(
            settings,
            url=url,
            auto_migrate=auto_migrate,
            embedding_model=embedder.name,
            embedding_dim=embedder.dim,
        )
        return cls(db, embedder, clock=clock, owns_db=True)

    async def close(self) -> None:
        """Close the database if this engine opened it."""
        if self._owns_db:
            await self.db.close()

    async def __aenter__(self) -> BeliefEngine:
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.close()

    # -- write path -------------------------------------------------------------------

    async def apply(
        self,
        user_id: str,
        ops: Sequence[Op],
        *,
        provenance: Provenance,
        hook: TransactionHook | None = None,
    ) -> ApplyResult:
        """Validate and apply a batch atomically; an invalid op rejects the whole batch."""
        return await write.apply_ops(self, user_id, ops, provenance=provenance, hook=hook)

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
        return await write.correct(
            self, user_id, belief_id, content, reason=reason, provenance=provenance
        )

    async def forget(
        self, user_id: str, belief_id: int, reason: str = "forgotten on request"
    ) -> ApplyResult:
        """Mark a belief as no longer true (an INVALIDATE); its text is kept in history."""
        return await write.forget(self, user_id, belief_id, reason)

    async def erase_user(self, user_id: str) -> EraseReceipt:
        """Hard-delete everything durable about the user, leave a tombstone, return a receipt."""
        return await erase.erase_user(self, user_id)

    async def reinstate_user(self, user_id: str) -> None:
        """Lift an erase tombstone so that new writes for the user are accepted again."""
        await erase.reinstate_user(self, user_id)

    # -- inspection -------------------------------------------------------------------

    async def get(self, user_id: str, belief_id: int) -> Belief:
        """One belief with its sources; :class:`BeliefNotFoundError` if not the user's."""
        return await inspection.get_belief(self, user_id, belief_id)

    async def history(
        self, user_id: str, *, include_inactive: bool = True, limit: int = 100
    ) -> list[Belief]:
        """The user's beliefs, oldest first (``valid_from``, then id)."""
        return await inspection.history(
            self, user_id, include_inactive=include_inactive, limit=limit
        )

    async def keyed(self, user_id: str, *, limit: int = 50) -> list[Belief]:
        """Active beliefs with a key (``home.city``…), newest first: extractor candidates."""
        return await inspection.keyed(self, user_id, limit=limit)

    async def ledger(
        self, user_id: str, *, belief_id: int | None = None, limit: int = 200
    ) -> list[LedgerEvent]:
        """Ledger events, oldest first, optionally for one belief."""
        return await inspection.ledger(self, user_id, belief_id=belief_id, limit=limit)

    async def user_version(self, user_id: str) -> int:
        """Monotonic counter bumped by every applied batch (0 for an unknown user)."""
        return await users.user_version(self, user_id)

    # -- read path --------------------------------------------------------------------

    async def search(
        self,
        user_id: str,
        query: str,
        *,
        limit: int = 10,
        include_history: bool = False,
        as_of: datetime | None = None,
        explain: bool = False,
    ) -> list[ScoredBelief]:
        """Ranked beliefs for ``query`` without rendering (the extractor's candidates)."""
        return await search(
            self,
            user_id,
            query,
            limit=limit,
            include_history=include_history,
            as_of=as_of,
            explain=explain,
        )

    async def recall(
        self,
        user_id: str,
        query: str,
        *,
        max_tokens: int = 800,
        include_history: bool = False,
        as_of: datetime | None = None,
        explain: bool = False,
    ) -> RecallResult:
        """The memory block for ``query``, packed into ``max_tokens`` (block included)."""
        return await recall(
            self,
            user_id,
            query,
            max_tokens=max_tokens,
            include_history=include_history,
            as_of=as_of,
            explain=explain,
        )

    async def recall_with_progress(
        self,
        user_id: str,
        query: str,
        *,
        watch: Sequence[int] = (),
        max_tokens: int = 800,
        include_history: bool = False,
        as_of: datetime | None = None,
        explain: bool = False,
    ) -> tuple[RecallResult, JobProgress]:
        """:meth:`recall` plus, from the same snapshot, the user's unfinished memory jobs
        and the state of those in ``watch`` (a barrier's probe, without its own round trip)."""
        return await recall_with_progress(
            self,
            user_id,
            query,
            watch=watch,
            max_tokens=max_tokens,
            include_history=include_history,
            as_of=as_of,
            explain=explain,
        )
