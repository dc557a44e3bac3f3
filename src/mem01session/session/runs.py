"""What a :class:`~mem01session.session.Mem01Session` keeps of its runs.

The SDK reads a session's history once at the start of each run, stores the run's input,
calls the model (through the memory filter of :func:`~.injection.memory_run_config`) and
stores the answer. :class:`SessionRuns` follows those steps: it counts the runs, starts a
run's recall as soon as its input is stored (:class:`~.injection.RecallPrefetch`), serves
the filter its block, marks the run as foreground work until its model call
(:data:`~mem01session.queue.foreground.FOREGROUND`), warns once when a run went without
the filter, and keeps recalled memory a tool returned out of the transcript
(:mod:`.recalled`).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence

from agents import RunConfig
from agents.items import TResponseInputItem

from ..engine.records import RecallRequest
from ..extraction import TurnMessage
from ..logs import get_logger
from ..queue.foreground import FOREGROUND
from ..spans import recall_span, recalled
from .durable_tier import DurableTier
from .injection import RecallPrefetch, memory_run_config
from .recalled import without_recalled

log = get_logger(__name__)

NO_RUN_CONFIG_WARNING = (
    "Mem01Session %r: a run finished without the memory filter, so the model was not shown "
    "what is remembered about the user (their turns are still recorded). Pass "
    "run_config=session.run_config() to Runner.run (or session.run_config(your_config))."
)


class SessionRuns:
    """One session's runs, as the memory filter and the transcript see them.

    ``request`` makes the recall request of a run's query (the session's budget and
    provenance at that moment), a method of the session held weakly. Nothing here, nor
    in the ``RunConfig`` it makes, refers back to the session: a session an application
    lets go of is freed at once, by reference counting, and its durable tier hands over
    its jobs then (not whenever the garbage collector finds a cycle).
    """

    def __init__(
        self,
        tier: DurableTier,
        session_id: str,
        request: weakref.WeakMethod[Callable[[str], RecallRequest]],
    ) -> None:
        self._tier = tier
        self._session_id = session_id
        self._request = request
        self._reads = 0  # the SDK reads the history once at the start of each run
        self._filtered_read: int | None = None  # the last run the memory filter served
        self._open = False  # a run read the history and has not stored its answer yet
        self._warned = False  # the warning of a run without the filter was given
        self._injecting = False  # run_config() was asked for: runs will want their recall
        self._prefetch = RecallPrefetch()
        self._mark = object()  # this session's run in FOREGROUND, until its model call
        self._refusal: str | None = None  # why this run's model call went without memory
        # The last run_config(), for its trace settings (weakly: it refers to this).
        self._traced: weakref.ref[RunConfig] | None = None
        self._tool_recalls: set[str] = set()  # tool calls whose output is recalled memory

    def run_config(self, base: RunConfig | None, placement: str) -> RunConfig:
        """A fresh ``RunConfig`` (``base`` kept) whose model-input filter injects memory."""
        self._injecting = True
        failures = self._tier.failures
        config = memory_run_config(
            self._block_for,
            base,
            lambda: self._reads,
            placement=placement,
            strict=lambda: failures.strict,
            rejected=self._refused,
        )
        self._traced = weakref.ref(config)
        return config

    def recalled_by_tool(self, call_id: str) -> None:
        self._tool_recalls.add(call_id)

    # -- the run's steps, as the session sees them -------------------------------------

    def history_read(self) -> None:
        """A run starts (its recall starts too: the worker gives way until the model call)."""
        self._reads += 1
        self._open = True
        if self._injecting:
            FOREGROUND.mark(self._mark)

    def storing(self, messages: Sequence[TurnMessage]) -> None:
        """Items of a run are about to be stored: with its input, its recall starts."""
        query = next((m.text for m in reversed(messages) if m.role == "user"), "")
        answered = any(m.role == "assistant" for m in messages)
        # Only for callers of run_config(): others would pay for a recall nobody reads.
        if self._injecting and query and not answered:
            self._prefetch.start((self._reads, query), lambda: self._block(query))
        else:
            self._prefetch.drop()

    def not_stored(self) -> None:
        """Storing them failed: the recall started for them is dropped."""
        self._prefetch.drop()

    def for_transcript(self, items: list[TResponseInputItem]) -> list[TResponseInputItem]:
        """``items`` as the transcript keeps them: recalled memory a tool returned becomes
        a note (see :mod:`.recalled`)."""
        return without_recalled(items, self._tool_recalls)

    def answered(self) -> None:
        """The run's answer is stored: it is no longer foreground work; warn, once, when it
        went without the memory filter."""
        FOREGROUND.unmark(self._mark)
        ran_without = self._open and self._filtered_read != self._reads
        self._open = False
        if ran_without and not self._warned:
            self._warned = True
            log.warning(NO_RUN_CONFIG_WARNING, self._session_id)

    def news(self) -> None:
        """After the answer's turn is stored: a refused block stays the run's news,
        whatever storing the turn went through."""
        if self._refusal is not None:
            self._tier.failures.last_error, self._refusal = self._refusal, None

    def end(self) -> None:
        FOREGROUND.unmark(self._mark)

    # -- the filter's side -------------------------------------------------------------

    def _refused(self, reason: str) -> None:
        """A model call of this run was refused because of the block (it is made again
        without it): recorded now, and kept as the run's news when its answer is stored."""
        self._refusal = reason
        self._tier.failures.record(reason, "injection")

    async def _block_for(self, query: str) -> str | None:
        self._filtered_read = self._reads
        started = self._prefetch.take((self._reads, query))
        try:
            return await (started if started is not None else self._block(query))
        finally:
            FOREGROUND.unmark(self._mark)  # the model's wait is not this process's CPU

    async def _block(self, query: str) -> str | None:
        request = self._request()
        if request is None:  # the session is gone: nobody reads this
            return None
        with recall_span() as span:
            result = await self._tier.recall(request(query), during_run=True)
            traced = self._traced() if self._traced is not None else None
            sensitive = traced is not None and traced.trace_include_sensitive_data
            recalled(span, result, waited_ms=self._tier.waited_ms, query=query, sensitive=sensitive)
        return (result.text or None) if result is not None else None


__all__ = ["NO_RUN_CONFIG_WARNING", "SessionRuns"]
