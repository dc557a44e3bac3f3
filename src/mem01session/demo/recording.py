"""A model wrapper that records what each call was given, for side-by-side comparison."""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator
from typing import Any

from agents.items import ItemHelpers, ModelResponse, TResponseInputItem, TResponseStreamEvent
from agents.models.interface import Model


class RecordingModel(Model):
    """Delegates to ``model`` and keeps a copy of every call's input items."""

    def __init__(self, model: Model) -> None:
        self.model = model
        self.inputs: list[list[TResponseInputItem]] = []

    async def get_response(
        self,
        system_instructions: str | None,
        input: str | list[TResponseInputItem],
        *args: Any,
        **kwargs: Any,
    ) -> ModelResponse:
        items = ItemHelpers.input_to_new_input_list(input)
        self.inputs.append(copy.deepcopy(items))
        return await self.model.get_response(system_instructions, input, *args, **kwargs)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[TResponseStreamEvent]:
        return self.model.stream_response(*args, **kwargs)
