"""Recall injection: the memory block reaches the model input, never the transcript.

:func:`memory_run_config` returns a fresh ``RunConfig`` whose ``call_model_input_filter``
recalls once per run (cached across tool loops and handoffs) for the current user
message and places the block (:mod:`~mem01session.session.placement`: a system message
before that message, a content part of it, or the instructions), after any filter the
caller already had. Its retry policy makes a call that a server refused because of the
block once more without it (:mod:`~mem01session.session.fallback`).

The query is read from the model input itself rather than captured with a
``session_input_callback``: with a callback the SDK deep-copies the whole history on
every run, a cost that grows with the transcript. A caller's own callback is kept.
A run is recognised by the session's run counter (the SDK reads the history once at
the start of each run) together with the query, so a reused ``RunConfig`` never serves
an earlier run's block.

Nothing a run's ``RunConfig`` holds refers back to it (the filter reaches the config
through a weak reference, the retry policy's calls name their policy by a token): a run's
objects are then freed as soon as the run lets go of them, not left as cycles for the
garbage collector, whose collections stop every conversation of the process.
"""

from __future__ import annotations

import asyncio
import copy
import inspect
import weakref
from collections.abc import Awaitable, Callable
from typing import Any

from agents import RunConfig
from agents.run_config import CallModelData, ModelInputData

from .fallback import BlockFallback
from .items import last_user_text
from .placement import choose, model_key, model_of, place, refused

RecallBlock = Callable[[str], Awaitable[str | None]]
RunCounter = Callable[[], int]


async def _resolve(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


class _RunMemory:
    """The recall of the current run: computed once, shared by its model calls."""

    def __init__(self, recall_block: RecallBlock, run_counter: RunCounter) -> None:
        self._recall_block = recall_block
        self._run_counter = run_counter
        self._key: tuple[int, str] | None = None
        self._task: asyncio.Future[str | None] | None = None

    async def block(self, query: str) -> str | None:
        key = (self._run_counter(), query)
        if self._task is None or key != self._key:
            self._key = key
            self._task = asyncio.ensure_future(self._recall_block(query))
        return await asyncio.shield(self._task)

    def drop(self) -> None:
        """The rest of the current run goes without a block (a server refused it)."""
        if self._key is not None:
            done: asyncio.Future[str | None] = asyncio.get_running_loop().create_future()
            done.set_result(None)
            self._task = done


RunKey = tuple[int, str]
"""A run (the session's run counter) and its query."""


class RecallPrefetch:
    """A run's recall, started before the model asks for it.

    In a non-streamed run the SDK stores the input before the first model call, so the
    session can start the recall right there: its database round trip then overlaps the
    transcript write and the SDK's own preparation. The model-input filter takes it when
    it is for the same run and query; anything else is cancelled. A streamed run stores
    its input after the first model call: its block has been served by then, and no
    second recall is started.
    """

    def __init__(self) -> None:
        self._key: RunKey | None = None
        self._task: asyncio.Future[str | None] | None = None
        self._served: RunKey | None = None

    def start(self, key: RunKey, recall: Callable[[], Awaitable[str | None]]) -> None:
        """Start the recall of run ``key`` (replacing any earlier one)."""
        self.drop()
        if key != self._served:
            self._key, self._task = key, asyncio.ensure_future(recall())

    def take(self, key: RunKey) -> asyncio.Future[str | None] | None:
        """The started recall if it is the one for ``key``; marks ``key`` as served."""
        self._served = key
        if self._key != key:
            self.drop()
            return None
        task, self._key, self._task = self._task, None, None
        return task

    def drop(self) -> None:
        """Cancel a started recall nobody took."""
        task, self._key, self._task = self._task, None, None
        if task is not None:
            task.cancel()  # also marks a failure nobody will read as handled


def memory_run_config(
    recall_block: RecallBlock,
    base: RunConfig | None = None,
    run_counter: RunCounter = lambda: 0,
    *,
    placement: str = "auto",
    strict: Callable[[], bool] = lambda: False,
    rejected: Callable[[str], None] = lambda reason: None,
) -> RunConfig:
    """A new ``RunConfig`` (``base``'s settings kept) that injects recalled memory.

    ``placement`` is ``auto`` or one of the placements; ``strict`` and ``rejected`` are
    the session's failure policy for a call refused because of the block.
    """
    memory = _RunMemory(recall_block, run_counter)
    caller_filter = base.call_model_input_filter if base else None

    def refused_run(reason: str) -> None:
        memory.drop()
        rejected(reason)

    fallback = BlockFallback(
        base.model_settings if base else None, strict=strict, rejected=refused_run
    )
    # A shallow copy, not ``dataclasses.replace``: replace runs RunConfig's validation
    # again, whose model-settings coercion resolves type hints (1.5 ms of CPU per run);
    # the two fields set below already have their declared types.
    config = copy.copy(base) if base is not None else RunConfig()
    config_ref = weakref.ref(config)

    async def on_model_input(data: CallModelData[Any]) -> ModelInputData:
        fallback.begin(data.agent)  # a new call: nothing of an earlier one can be retried
        query = last_user_text(data.model_data.input)
        model_data = data.model_data
        if caller_filter is not None:
            model_data = await _resolve(caller_filter(data))
        block = await memory.block(query)
        if not block:
            return model_data
        run_config = config_ref()  # alive: the run calling this filter holds it
        model = None if run_config is None else model_of(data.agent, run_config)
        key = model_key(model)
        where = choose(placement, refused(key))
        if where is None:  # this model's server refused every placement in this process
            refused_run(
                "injection skipped: the model API refused the memory block in every "
                "placement earlier in this process; this run answered without it"
            )
            return model_data
        placed = place(model_data, block, where)
        fallback.carried(placed, model_data.instructions, where, key)
        return placed

    config.call_model_input_filter = on_model_input
    config.model_settings = fallback.model_settings()
    return config
