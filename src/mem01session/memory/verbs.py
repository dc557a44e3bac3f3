"""What an application asks of its memory, user by user: the verbs of
:class:`~mem01session.memory.Memory` (this mixin), and of every surface built on it (the
command line, the memory browser, the agent's tools, the MCP server).

Reads: :meth:`~MemoryVerbs.users`, :meth:`~MemoryVerbs.beliefs`,
:meth:`~MemoryVerbs.history`, :meth:`~MemoryVerbs.episodes`, :meth:`~MemoryVerbs.jobs`
and their one-record forms; :meth:`~MemoryVerbs.recall` (the block a model is shown).
Writes go to the engine directly, never through the queue: each takes the user's lock,
passes the engine's validation (a statement that holds a secret, or is over 1,000
characters, is refused with :class:`~mem01session.errors.InvalidOpError` saying why, and
nothing changes; so is one :meth:`~MemoryVerbs.remember` or :meth:`~MemoryVerbs.correct`
is given that reads as an instruction to the assistant, as every extractor's op and the
agent's tools are screened) and lands in the ledger in one transaction, recorded with
``provenance`` (default: the verb's name as the author). Every verb but
:meth:`~MemoryVerbs.erase`, :meth:`~MemoryVerbs.compact` and :meth:`~MemoryVerbs.reembed`
answers within :data:`VERB_TIMEOUT_SECONDS` once the memory is open, or raises
:class:`~mem01session.errors.Mem01MemoryError` saying the database did not answer (a
change not yet committed is rolled back).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, TypeVar

from ..bounded import STALLED, Bound
from ..checks import check_id, check_positive_int
from ..engine import BeliefEngine
from ..engine.ops import Op, Provenance
from ..engine.records import (
    DEFAULT_MAX_TOKENS,
    ApplyResult,
    Belief,
    BlockProvenance,
    Episode,
    LedgerEvent,
    RecallRequest,
    RecallResult,
    ReembedReport,
    UserSummary,
)
from ..engine.validate import TargetNotFoundError
from ..errors import InvalidOpError, Mem01MemoryError
from ..extraction.directives import directive
from ..queue import JobStore
from ..queue.job_records import Job, JobCounts
from .reader import MemoryReader
from .schema import SchemaStatus

if TYPE_CHECKING:
    from .runtime import Runtime

T = TypeVar("T")

VERB_TIMEOUT_SECONDS = 30.0
"""How long a verb waits for the database once the memory is open."""

MAX_KEYED = 500
"""Active keyed beliefs looked through for :meth:`MemoryVerbs.remember`'s ``key``."""


class MemoryVerbs:
    """The user-level verbs (see the module docstring); ``Memory`` is one."""

    _runtime: Runtime

    # -- reads ---------------------------------------------------------------------------

    async def users(self, *, contains: str | None = None, limit: int = 200) -> list[UserSummary]:
        """Users with durable memory, erased ones included, most recently changed first;
        with ``contains``, only user ids containing it (ignoring case)."""
        return await self._read(lambda r: r.users(contains=contains, limit=limit))

    async def user(self, user_id: str) -> UserSummary | None:
        """The user's summary (version, erase tombstone, belief counts); None if unknown."""
        return await self._read(lambda r: r.user(user_id))

    async def knows(self, user_id: str) -> bool:
        """Whether anything durable was recorded for the user (an applied turn, an erase,
        or a turn waiting for the worker)."""
        return await self._read(lambda r: r.knows(user_id))

    async def beliefs(
        self,
        user_id: str,
        *,
        include_inactive: bool = False,
        contains: str | None = None,
        limit: int = 100,
    ) -> list[Belief]:
        """The user's most recent ``limit`` beliefs with their sources, oldest first: the
        current ones, or with ``include_inactive`` also those superseded, invalidated or
        merged (with when each held); with ``contains``, those whose statement contains it
        (ignoring case)."""
        return await self._read(
            lambda r: r.beliefs(
                user_id, include_inactive=include_inactive, contains=contains, limit=limit
            )
        )

    async def belief(self, user_id: str, belief_id: int) -> Belief:
        """One belief of the user, in any status, with its sources;
        :class:`~mem01session.errors.BeliefNotFoundError` if it is not the user's (another
        user's id is answered exactly like a missing one)."""
        return await self._read(lambda r: r.belief(user_id, belief_id))

    async def history(
        self, user_id: str, *, belief_id: int | None = None, limit: int = 200
    ) -> list[LedgerEvent]:
        """What changed in the user's memory, oldest first: the ledger's events (op, before
        and after, reason, author, job); with ``belief_id``, that belief's."""
        return await self._read(lambda r: r.history(user_id, belief_id=belief_id, limit=limit))

    async def episodes(
        self,
        user_id: str,
        *,
        session_id: str | None = None,
        contains: str | None = None,
        limit: int = 100,
    ) -> list[Episode]:
        """What the user said, verbatim and dated, oldest first (hidden ones included),
        each with the beliefs drawn from it; with ``session_id``, one conversation's; with
        ``contains``, those whose words contain it (ignoring case)."""
        return await self._read(
            lambda r: r.episodes(user_id, session_id=session_id, contains=contains, limit=limit)
        )

    async def episode(self, user_id: str, episode_id: int) -> Episode:
        """One episode of the user; :class:`~mem01session.errors.EpisodeNotFoundError` if it
        is not the user's."""
        return await self._read(lambda r: r.episode(user_id, episode_id))

    async def jobs(
        self, *, user_id: str | None = None, status: str | None = None, limit: int = 100
    ) -> list[Job]:
        """Extraction jobs (one per turn), newest first, optionally one user's or in one
        status (``pending``, ``running``, ``done``, ``failed``)."""
        return await self._read(lambda r: r.jobs(user_id=user_id, status=status, limit=limit))

    async def job(self, job_id: int) -> Job | None:
        """One job by id, of whichever user (None: no such job)."""
        check_positive_int("job_id", job_id)
        return await self._bounded(lambda _, store: store.get(job_id))

    async def job_counts(self, user_id: str) -> JobCounts:
        """How many of the user's jobs are in each status."""
        user_id = check_id("user_id", user_id)
        return await self._bounded(lambda _, store: store.counts(user_id))

    async def open_jobs(self, *, contains: str | None = None) -> dict[str, JobCounts]:
        """Users with jobs pending, running or failed, most recently changed first (they
        may have no belief yet); with ``contains``, only user ids containing it."""
        return await self._bounded(lambda _, store: store.open_by_user(contains=contains))

    async def schema_status(self) -> SchemaStatus:
        """The revision the memory's database is at (the memory opens it at this library's
        newest, or refuses to open)."""
        return await self._read(lambda r: r.schema_status())

    async def recall(
        self,
        user_id: str,
        query: str,
        *,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        include_history: bool = False,
        as_of: datetime | None = None,
        explain: bool = False,
        provenance: BlockProvenance = "none",
        timezone: str | None = None,
    ) -> RecallResult:
        """The memory block a model would be shown for ``query`` (see
        :class:`~mem01session.memory.records.RecallRequest` for the options). The block's
        dates are days in ``timezone``; None: the zone the user's sessions last gave, else
        UTC. Unlike a session's recall it does not wait for turns still queued."""
        request = RecallRequest(
            query,
            max_tokens,
            include_history,
            as_of,
            explain,
            provenance=provenance,
            timezone=timezone,
        )

        async def recall(engine: BeliefEngine, _: JobStore) -> RecallResult:
            zone = request.timezone
            if zone is None:
                zone = await engine.user_timezone(user_id)
            asked = request if zone is None else replace(request, timezone=zone)
            return await engine.recall(user_id, asked)

        return await self._bounded(recall)

    # -- writes --------------------------------------------------------------------------

    async def remember(
        self,
        user_id: str,
        statement: str,
        *,
        key: str | None = None,
        reason: str | None = None,
        provenance: Provenance | None = None,
    ) -> ApplyResult:
        """Store ``statement`` as a belief (an ADD; an exact restatement of an active belief
        confirms it instead). With a ``key`` (``home.city``), an active belief under that
        key that says something else is superseded by it: it keeps its text and ends now,
        in history, as when the extractor sees a fact change."""
        user_id = check_id("user_id", user_id)
        _not_addressed("ADD", statement, key)
        op = Op("ADD", content=statement, key=key, reason=reason or "remembered on request")
        author = provenance or Provenance(extractor="remember")

        async def write(engine: BeliefEngine, _: JobStore) -> ApplyResult:
            for _attempt in range(3):  # a keyed belief retired meanwhile: look again
                change = await _keyed_change(engine, user_id, op)
                try:
                    return await engine.apply(user_id, [change], provenance=author)
                except TargetNotFoundError:
                    continue
            return await engine.apply(user_id, [op], provenance=author)

        return await self._one_op(write)

    async def correct(
        self,
        user_id: str,
        belief_id: int,
        statement: str,
        *,
        reason: str | None = None,
        provenance: Provenance | None = None,
    ) -> ApplyResult:
        """Replace what an active belief says (it was wrong): a new belief supersedes it,
        recorded as a correction; the old statement stays in history. A statement the
        belief already makes is refused with ``InvalidOpError``; a belief that is not an
        active one of the user's with ``BeliefNotFoundError``."""
        user_id = check_id("user_id", user_id)
        if not isinstance(statement, str):
            reason_ = f"the statement must be a str, got {type(statement).__name__}"
            raise InvalidOpError(0, "CORRECT", reason_, single=True)
        _not_addressed("CORRECT", statement)
        why = reason or "corrected"

        async def write(engine: BeliefEngine, _: JobStore) -> ApplyResult:
            current = await engine.get(user_id, belief_id)
            if current.status == "active" and current.says(statement):
                raise InvalidOpError(
                    0, "CORRECT", f"belief #{belief_id} already says that; nothing to correct"
                )
            return await engine.correct(
                user_id, belief_id, statement, reason=why, provenance=provenance
            )

        return await self._one_op(write)

    async def forget(
        self,
        user_id: str,
        belief_id: int,
        *,
        reason: str = "forgotten on request",
        provenance: Provenance | None = None,
    ) -> ApplyResult:
        """Mark an active belief as no longer true: it leaves recall, with the episodes it
        was drawn from; its text stays in history."""
        user_id = check_id("user_id", user_id)
        return await self._bounded(
            lambda engine, _: engine.forget(user_id, belief_id, reason, provenance=provenance)
        )

    async def retry_job(self, job_id: int, *, user_id: str | None = None) -> Job | None:
        """Send a failed job back to the queue (pending, attempts reset); None if there is
        no failed job ``job_id`` (among ``user_id``'s, when given), if it records a turn
        that was never stored, or if its user was erased."""
        check_positive_int("job_id", job_id)
        if user_id is not None:
            user_id = check_id("user_id", user_id)
        return await self._bounded(
            lambda engine, store: store.retry(job_id, now=engine.clock(), user_id=user_id)
        )

    async def reembed(
        self,
        *,
        user_id: str | None = None,
        dry_run: bool = False,
        batch_size: int = 64,
        progress: Callable[[int], None] | None = None,
    ) -> ReembedReport:
        """Give every belief and episode whose vector another embedding model made a vector
        of this memory's (safe while the application runs; resumable), for one user or
        all; ``progress`` is told how many were converted after each batch. With
        ``dry_run``, only count them (``found``)."""
        engine = await self._runtime.engine()
        if dry_run:
            found = await engine.count_other_model(user_id)
            return ReembedReport(engine.embedder.name, found, 0, 0)
        return await engine.reembed(user_id=user_id, batch_size=batch_size, progress=progress)

    # -- helpers -------------------------------------------------------------------------

    async def _read(self, work: Callable[[MemoryReader], Awaitable[T]]) -> T:
        return await self._bounded(lambda engine, _: work(MemoryReader(engine.db.direct)))

    async def _one_op(self, work: Callable[[BeliefEngine, JobStore], Awaitable[T]]) -> T:
        """``work`` (:meth:`_bounded`), which applies the one op a verb made: a refusal of
        it names the op, not its place in a batch the caller never made."""
        try:
            return await self._bounded(work)
        except InvalidOpError as exc:
            raise InvalidOpError(exc.index, exc.op, exc.reason, single=True) from None

    async def _bounded(self, work: Callable[[BeliefEngine, JobStore], Awaitable[T]]) -> T:
        """``work`` on the open engine, within :data:`VERB_TIMEOUT_SECONDS`."""
        engine = await self._runtime.engine()
        bound = Bound(VERB_TIMEOUT_SECONDS)
        try:
            return await bound.run(work(engine, JobStore(engine.db)))
        except TimeoutError:
            if not bound.expired:
                raise
        raise Mem01MemoryError(
            f"memory did not answer within {VERB_TIMEOUT_SECONDS:g} s ({STALLED})"
        )


async def _keyed_change(engine: BeliefEngine, user_id: str, op: Op) -> Op:
    """``op`` (an ADD), or a SUPERSEDE of the active belief under its key that says
    something else."""
    if op.key is None or op.content is None:
        return op
    same_key = [b for b in await engine.keyed(user_id, limit=MAX_KEYED) if b.key == op.key]
    if not same_key or any(b.says(op.content) for b in same_key):
        return op  # new key, or a restatement: the ADD confirms it
    return Op.supersede(same_key[0].id, op.content, key=op.key, reason=op.reason)


def _not_addressed(op: str, statement: str, key: str | None = None) -> None:
    """Refuse a statement that reads as an instruction to the assistant (the screen of
    :mod:`~mem01session.extraction.directives`): stored, it would be read back to the model
    in every later run as what the memory knows."""
    why = directive(statement if isinstance(statement, str) else "")
    why = why or (directive(key) if isinstance(key, str) else None)
    if why is not None:
        raise InvalidOpError(
            0, op, f"the statement reads as an instruction to the assistant ({why}), not a "
            "fact about the user; memory does not store one", single=True,
        )  # fmt: skip


__all__ = ["MAX_KEYED", "VERB_TIMEOUT_SECONDS", "MemoryVerbs"]
