"""Recall injection: the memory block reaches the model input, never the transcript.

:func:`memory_run_config` returns a fresh ``RunConfig`` whose

* ``session_input_callback`` notes the current user query at the start of each run and
  returns history + new input unchanged (so the SDK persists exactly what it would);
* ``call_model_input_filter`` recalls once per run (cached across tool loops and
  handoffs) and inserts the block just before the current user message, after any filter
  the caller already had.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
from collections.abc import Awaitable, Callable
from typing import Any

from agents import RunConfig
from agents.items import TResponseInputItem
from agents.run_config import CallModelData, ModelInputData

from .turns import last_user_index, last_user_text

RecallBlock = Callable[[str], Awaitable[str | None]]


async def _resolve(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


class _RunMemory:
    """The recall of one run: computed once, shared by every model call of the run."""

    def __init__(self, recall_block: RecallBlock) -> None:
        self._recall_block = recall_block
        self._query: str | None = None
        self._task: asyncio.Future[str | None] | None = None

    def start_run(self, query: str) -> None:
        self._query = query
        self._task = None

    async def block(self, fallback_query: str) -> str | None:
        if self._task is None:
            query = self._query if self._query is not None else fallback_query
            self._task = asyncio.ensure_future(self._recall_block(query))
        return await asyncio.shield(self._task)


def memory_message(block: str) -> TResponseInputItem:
    """The input item that carries the block (a system message the SDK never stores)."""
    return {"role": "system", "content": block}


def insert_block(items: list[TResponseInputItem], block: str) -> list[TResponseInputItem]:
    """A copy of ``items`` with the block just before the current (last) user message."""
    index = last_user_index(items)
    position = len(items) if index is None else index
    return [*items[:position], memory_message(block), *items[position:]]


def memory_run_config(recall_block: RecallBlock, base: RunConfig | None = None) -> RunConfig:
    """A new ``RunConfig`` (``base``'s settings kept) that injects recalled memory."""
    memory = _RunMemory(recall_block)
    caller_callback = base.session_input_callback if base else None
    caller_filter = base.call_model_input_filter if base else None

    async def on_session_input(
        history: list[TResponseInputItem], new_input: list[TResponseInputItem]
    ) -> list[TResponseInputItem]:
        memory.start_run(last_user_text(new_input))
        if caller_callback is not None:
            combined: list[TResponseInputItem] = await _resolve(caller_callback(history, new_input))
            return combined
        return history + new_input

    async def on_model_input(data: CallModelData[Any]) -> ModelInputData:
        model_data = data.model_data
        if caller_filter is not None:
            model_data = await _resolve(caller_filter(data))
        block = await memory.block(last_user_text(model_data.input))
        if not block:
            return model_data
        return ModelInputData(
            input=insert_block(list(model_data.input), block),
            instructions=model_data.instructions,
        )

    return dataclasses.replace(
        base or RunConfig(),
        session_input_callback=on_session_input,
        call_model_input_filter=on_model_input,
    )
