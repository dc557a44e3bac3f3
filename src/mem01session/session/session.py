"""``Mem01Session``: the Agents SDK session with a durable, user-scoped memory tier."""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from agents import RunConfig
from agents.items import TResponseInputItem
from agents.memory import Session, SessionSettings, SQLiteSession

from ..checks import (
    check_id,
    check_items,
    check_limit,
    check_positive_int,
    check_seconds,
    check_session,
)
from ..engine.records import DEFAULT_MAX_TOKENS, BlockProvenance, RecallRequest, RecallResult
from ..errors import ConfigError, MemoryClosedError
from ..memory import Memory, host_of
from ..private import data_folder, private_file
from ..spans import enqueue_span
from .durable_tier import DurableTier
from .items import redacted, turn_messages
from .options import SessionOptions, TranscriptSecrets
from .runs import SessionRuns


class Mem01Session:
    """An SDK ``Session`` whose transcript lives in ``inner`` and whose memory lives in PostgreSQL.

    ``get_items``/``add_items``/``pop_item``/``clear_session`` act on the transcript of
    ``session_id`` (an SDK ``SQLiteSession`` under ``MEM01_HOME`` unless ``inner`` is
    given). ``add_items`` also records the turn for extraction; a background worker turns
    it into beliefs about ``user_id`` after the answer. Pass ``run_config=session.run_config()``
    to ``Runner.run`` so the model sees what is remembered (a run without it logs a warning,
    once per session).

    ``provenance`` sets what the memory block says of where each belief came from:
    ``"none"`` (the statements only, the default), ``"brief"`` (when and in which
    conversation it was said) or ``"quote"`` (also the quoted evidence and the belief's id,
    for a model that cites its sources).

    ``memory`` is the application's :class:`~mem01session.memory.Memory`; without one the
    session opens a private one from the environment on first use and closes it in
    :meth:`aclose`.

    ``memory_placement`` says where the block goes in the model input: ``auto`` (in front
    of the words of the current user message: what users said comes back with no more
    authority than their own message), ``user`` (the same), or, only when you ask for
    system authority, ``system`` or ``instructions``; default ``MEM01_MEMORY_PLACEMENT``
    (see :mod:`mem01session.session.placement`).

    ``transcript_secrets``: ``"keep"`` (the default) stores the conversation in ``inner``
    as it was said, as the SDK's sessions do (in a file only its owner reads, for the
    default store); ``"redact"`` replaces the secrets of its messages first (card numbers,
    keys, passwords: the screen durable memory uses), so that later turns of the
    conversation read ``[redacted]`` where the secret was. Durable memory never keeps them
    either way.

    ``timezone`` is the user's IANA time zone (``"America/Los_Angeles"``): their turns are
    stamped with its local time, so that "yesterday" is their yesterday, and the block's
    dates are days there; it is recorded for the user with the turns (the surfaces without a
    session, such as the command line, date in it). Default None: UTC. It can be changed
    later (``session.timezone``).

    Memory failures never break the conversation (``last_memory_error`` says what went
    wrong; a model call refused because of the block is made again without it) unless
    ``strict=True``, which raises :class:`Mem01MemoryError` instead. While
    the database is unreachable, turns are kept in memory (at most
    :data:`~mem01session.queue.buffer.MAX_UNSENT_TURNS`, see :func:`session_health`) and
    enqueued, in order, by the next ``add_items``, ``recall``, ``flush_memory`` or
    ``aclose`` that reaches it; with ``strict=True`` the failing ``add_items`` raises and
    keeps nothing.
    """

    def __init__(
        self,
        session_id: str,
        user_id: str,
        *,
        inner: Session | None = None,
        memory: Memory | None = None,
        max_memory_tokens: int = DEFAULT_MAX_TOKENS,
        strict: bool = False,
        recall_wait: float = 2.0,
        provenance: BlockProvenance = "none",
        memory_placement: str | None = None,
        timezone: str | None = None,
        transcript_secrets: TranscriptSecrets = "keep",
    ) -> None:
        self.session_id = check_id("session_id", session_id)
        self.user_id = check_id("user_id", user_id)
        options = SessionOptions(
            max_memory_tokens=max_memory_tokens,
            strict=strict,
            recall_wait=recall_wait,
            provenance=provenance,
            memory_placement=memory_placement,
            timezone=timezone,
            transcript_secrets=transcript_secrets,
        )
        self._closed = False
        self._redact_transcript = options.transcript_secrets == "redact"
        self._max_memory_tokens = options.max_memory_tokens
        self._provenance: BlockProvenance = options.provenance
        if inner is not None:
            check_session("inner", inner)
            if records_turns(inner):
                raise ConfigError(
                    "inner is a Mem01Session already: every turn would be remembered twice; "
                    "give it the session that keeps the transcript (SQLiteSession, "
                    "TrimmingSession, ...)"
                )
        if memory is not None and not isinstance(memory, Memory):
            raise ConfigError(f"memory must be a Memory, got {type(memory).__name__}")
        self._owns_memory = memory is None
        self.memory = memory if memory is not None else Memory()
        """The application object this session's durable memory belongs to: its verbs
        read and change the user's memory (``session.memory.beliefs(session.user_id)``)."""
        self._placement = options.placement(self.memory)
        self._owns_inner = inner is None
        self._inner: Session = inner if inner is not None else self._default_inner()
        self._tier = DurableTier(
            host_of(self.memory),
            self.user_id,
            self.session_id,
            strict=options.strict,
            recall_wait=options.recall_wait,
            timezone=options.timezone,
            owns_memory=self._owns_memory,
        )
        self._runs = SessionRuns(self._tier, self.session_id, weakref.WeakMethod(self._request))

    def __repr__(self) -> str:
        return (
            f"Mem01Session(session_id={self.session_id!r}, user_id={self.user_id!r}, "
            f"strict={self._tier.failures.strict})"
        )

    @property
    def max_memory_tokens(self) -> int:
        """The token budget of the memory block each model call is given; settable (a
        bad value is refused here, not by the next run)."""
        return self._max_memory_tokens

    @max_memory_tokens.setter
    def max_memory_tokens(self, tokens: int) -> None:
        self._max_memory_tokens = check_positive_int("max_memory_tokens", tokens)

    @property
    def timezone(self) -> str | None:
        """The user's IANA time zone (None: UTC); settable, e.g. when they travel: turns
        said from then on are stamped with it, and recalls date in it."""
        return self._tier.timezone

    @timezone.setter
    def timezone(self, name: str | None) -> None:
        self._tier.timezone = name  # checked there, before anything changes

    @property
    def last_memory_error(self) -> str | None:
        """What went wrong last in the memory tier (sanitized), or None."""
        return self._tier.failures.last_error

    @last_memory_error.setter
    def last_memory_error(self, value: str | None) -> None:
        self._tier.failures.last_error = value

    @property
    def last_recall(self) -> RecallResult | None:
        """What the last recall returned (what the model was shown)."""
        return self._tier.last_recall

    @property
    def session_settings(self) -> SessionSettings | None:
        """The transcript store's settings (e.g. the history ``limit``)."""
        return getattr(self._inner, "session_settings", None)

    @session_settings.setter
    def session_settings(self, value: SessionSettings | None) -> None:
        self._inner.session_settings = value

    def _default_inner(self) -> Session:
        home = data_folder(Path(self.memory.settings.home))
        return SQLiteSession(self.session_id, private_file(home / "transcripts.sqlite"))

    # -- the SDK Session protocol: transcript -----------------------------------------

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        self._check_open()
        limit = check_limit(limit)
        self._runs.history_read()
        items = await self._inner.get_items(limit)
        self._tier.see_history(items)  # what the model will read of this conversation
        return items

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Write the transcript first, then record the turn's text for extraction.

        A run's input is held until its answer is stored, then the whole turn becomes one
        durable job. If the database cannot take it, the turn waits in memory and is
        enqueued later (see the class docstring); ``strict=True`` raises instead.
        """
        self._check_open()
        check_items(items)
        messages = turn_messages(items)
        self._runs.storing(messages)
        try:
            kept = self._runs.for_transcript(items)
            await self._inner.add_items(redacted(kept) if self._redact_transcript else kept)
        except BaseException:
            self._runs.not_stored()
            raise
        answered = any(m.role == "assistant" for m in messages)
        if answered:
            self._runs.answered()
        if messages:
            with enqueue_span([m.role for m in messages]) as span:
                self._tier.last_jobs = []
                await self._tier.take_turn(messages)
                span.update(job_ids=self._tier.last_jobs, unsent_turns=self._tier.unsent)
        if answered:
            self._runs.news()

    async def pop_item(self) -> TResponseInputItem | None:
        """Remove the newest transcript item. Durable memory is untouched, but a message
        not yet answered (a run that failed) is no longer remembered either."""
        self._check_open()
        item = await self._inner.pop_item()
        if item is not None:
            self._tier.retract(turn_messages([item]))
        return item

    async def clear_session(self) -> None:
        """Clear this conversation's transcript. Durable memory is untouched, but a message
        not yet answered (a run that failed) is no longer remembered either."""
        self._check_open()
        await self._inner.clear_session()
        self._tier.cleared()

    # -- injection ---------------------------------------------------------------------

    def run_config(self, base: RunConfig | None = None) -> RunConfig:
        """A fresh ``RunConfig`` (``base`` kept) that injects this user's memory."""
        return self._runs.run_config(base, self._placement)

    def _request(self, query: str) -> RecallRequest:
        """A run's recall request for ``query``."""
        return RecallRequest(
            query, self.max_memory_tokens, provenance=self._provenance, timezone=self.timezone
        )

    # -- memory ------------------------------------------------------------------------

    async def recall(
        self,
        query: str,
        *,
        max_tokens: int | None = None,
        include_history: bool = False,
        as_of: datetime | None = None,
        explain: bool = False,
    ) -> RecallResult | None:
        """What the model would be shown for ``query`` (None if memory is unavailable).

        Waits (at most ``recall_wait`` seconds) for the user's turns accepted so far. A bad
        argument raises :class:`ConfigError`.
        """
        budget = self.max_memory_tokens if max_tokens is None else max_tokens
        request = RecallRequest(
            query,
            budget,
            include_history,
            as_of,
            explain,
            provenance=self._provenance,
            timezone=self.timezone,
        )
        return await self._tier.recall(request, during_run=False)

    async def flush_memory(self, timeout: float | None = 30.0) -> bool:
        """Wait until every turn accepted for this user so far is applied (True) or the
        timeout passes (False)."""
        return await self._tier.flush(check_seconds("timeout", timeout, allow_none=True))

    # -- lifecycle ---------------------------------------------------------------------

    async def aclose(self, *, flush_timeout: float = 5.0) -> None:
        """Give pending extraction a bounded chance to finish, then close what this session
        created (the default transcript store, a private memory). Unfinished jobs stay
        durable and resume at the next start."""
        check_seconds("flush_timeout", flush_timeout)
        self._closed = True
        self._runs.end()
        try:
            await self._tier.close(flush_timeout)
        finally:
            try:
                if self._owns_memory:
                    await self.memory.aclose(flush_timeout=flush_timeout)
            finally:
                if self._owns_inner:
                    close = getattr(self._inner, "close", None)
                    if callable(close):
                        close()

    def _check_open(self) -> None:
        """Refuse the transcript's methods once ``aclose`` closed the store this session
        made (one it was given stays the caller's, and readable)."""
        if self._closed and self._owns_inner:
            raise MemoryClosedError(
                f"Mem01Session {self.session_id!r} is closed; make a new one for the "
                "conversation (its transcript is kept)"
            )

    async def __aenter__(self) -> Mem01Session:
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.aclose()


def records_turns(session: object) -> bool:
    """A Mem01Session, or a managed chat over one: what is added to it becomes memory."""
    return memory_session(session) is not None


def memory_session(session: object) -> Mem01Session | None:
    """The Mem01Session ``session`` is, or wraps (a managed chat over one); else None."""
    if isinstance(session, Mem01Session):
        return session
    inner = getattr(session, "session", None)  # a managed chat over one
    return inner if isinstance(inner, Mem01Session) else None


def note_recalled(session: object, call_id: str) -> None:
    """The output of tool call ``call_id`` (``search_memory``'s) holds recalled memory: a
    Mem01Session stores it in the transcript as a note, never as the memory (see
    :mod:`.recalled`); any other session is left as it is."""
    found = memory_session(session)
    if found is not None:
        found._runs.recalled_by_tool(call_id)


@dataclass(frozen=True)
class SessionHealth:
    """How a session's memory tier is doing (for monitoring and tests)."""

    last_memory_error: str | None
    """What went wrong last (sanitized), or None."""
    unsent_turns: int
    """Completed turns not yet enqueued (the database was unreachable)."""
    dropped_turns: int
    """Turns given up on: beyond the in-memory limit during an outage, or unsent at close."""
    strict: bool


def session_health(session: object) -> SessionHealth:
    """The :class:`SessionHealth` of ``session`` (a Mem01Session, or a managed chat over
    one; else :class:`ConfigError`)."""
    found = memory_session(session)
    if found is None:
        raise ConfigError(f"session must be a Mem01Session, got {type(session).__name__}")
    tier = found._tier
    return SessionHealth(tier.failures.last_error, tier.unsent, tier.dropped, tier.failures.strict)


__all__ = [
    "Mem01Session",
    "SessionHealth",
    "memory_session",
    "note_recalled",
    "records_turns",
    "session_health",
]
