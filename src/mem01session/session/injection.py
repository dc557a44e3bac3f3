"""Recall injection: the memory block reaches the model input, never the transcript.

:func:`memory_run_config` returns a fresh ``RunConfig`` whose ``call_model_input_filter``
recalls once per run (cached across tool loops and handoffs) for the current user
message and inserts the block just before it, after any filter the caller already had.

The query is read from the model input itself rather than captured with a
``session_input_callback``: with a callback the SDK deep-copies the whole history on
every run, a cost that grows with the transcript. A caller's own callback is kept.
A run is recognised by the session's run counter (the SDK reads the history once at
the start of each run) together with the query, so a reused ``RunConfig`` never serves
an earlier run's block.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
from collections.abc import Awaitable, Callable
from typing import Any, cast

from agents import RunConfig
from agents.items import TResponseInputItem
from agents.run_config import CallModelData, ModelInputData

from .items import MemoryItem, last_user_index, last_user_text

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


def memory_message(block: str) -> TResponseInputItem:
    """The input item that carries the block (a system message the SDK never stores)."""
    return cast(TResponseInputItem, MemoryItem(role="system", content=block))


def insert_block(items: list[TResponseInputItem], block: str) -> list[TResponseInputItem]:
    """A copy of ``items`` with the block just before the current (last) user message."""
    index = last_user_index(items)
    position = len(items) if index is None else index
    return [*items[:position], memory_message(block), *items[position:]]


def memory_run_config(
    recall_block: RecallBlock, base: RunConfig | None = None, run_counter: RunCounter = lambda: 0
) -> RunConfig:
    """A new ``RunConfig`` (``base``'s settings kept) that injects recalled memory."""
    memory = _RunMemory(recall_block, run_counter)
    caller_filter = base.call_model_input_filter if base else None

    async def on_model_input(data: CallModelData[Any]) -> ModelInputData:
        query = last_user_text(data.model_data.input)
        model_data = data.model_data
        if caller_filter is not None:
            model_data = await _resolve(caller_filter(data))
        block = await memory.block(query)
        if not block:
            return model_data
        return ModelInputData(
            input=insert_block(list(model_data.input), block),
            instructions=model_data.instructions,
        )

    return dataclasses.replace(base or RunConfig(), call_model_input_filter=on_model_input)
