"""Where the memory block goes in the model input, so that every chat template takes it.

``system``
    A system message of its own just before the current user message (a
    :class:`~mem01session.session.items.MemoryItem`). The Responses API takes system
    messages anywhere; many chat templates do not: Gemma's and Mistral's accept one
    system message, first, then strict user/assistant alternation, and raise
    ("Conversation roles must alternate") on a second one.
``user``
    A separate content part at the start of the current user message (a
    :class:`~mem01session.session.items.MemoryPart` in a copy of that message; the SDK's
    own item is never changed, so the transcript never holds it). The block's header marks
    it as recalled data, not the user's words. The roles stay exactly as the SDK made them,
    and templates that drop system messages (llama.cpp's built-in ``gemma`` format) keep
    it.
``instructions``
    Appended to the agent's instructions for this call only: one leading system message
    (Chat Completions) or the ``instructions`` field (Responses). Lost by templates that
    drop system messages.

``auto`` (the default) chooses per model API: ``user`` for Chat Completions models (the
only placement that strict templates accept and that dropping templates keep), ``system``
for the Responses API and for models whose API is unknown. A custom ``Model`` (a wrapper,
say) can name its API with a ``mem01_model_api`` attribute, ``"chat"`` or ``"responses"``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, cast

from agents import Agent, RunConfig
from agents.items import TResponseInputItem
from agents.models.interface import Model
from agents.models.openai_chatcompletions import OpenAIChatCompletionsModel
from agents.models.openai_responses import OpenAIResponsesModel
from agents.run_config import ModelInputData

from .items import MemoryCarrier, MemoryItem, MemoryPart, last_user_index

Placement = Literal["system", "user", "instructions"]
ModelApi = Literal["chat", "responses"]


def model_api_of(model: object) -> ModelApi | None:
    """The API ``model`` speaks, when it can be told."""
    declared = getattr(model, "mem01_model_api", None)
    if declared in ("chat", "responses"):
        return cast(ModelApi, declared)
    if isinstance(model, OpenAIResponsesModel):
        return "responses"
    if isinstance(model, OpenAIChatCompletionsModel):
        return "chat"
    kind = type(model).__name__
    if kind == "LitellmModel":  # agents.extensions: always Chat Completions messages
        return "chat"
    if kind == "AnyLLMModel":
        api = getattr(model, "api", None)
        return "chat" if api == "chat_completions" else "responses" if api == "responses" else None
    return None


def model_api(agent: Agent[Any], config: RunConfig) -> ModelApi | None:
    """The API of the model the SDK uses for ``agent`` under ``config`` (as the SDK
    resolves it: the run's model, else the agent's, names through the provider)."""
    model: object = config.model if config.model is not None else agent.model
    if not isinstance(model, Model):
        try:
            model = config.model_provider.get_model(cast(str | None, model))
        except Exception:  # the SDK reports a model it cannot make; here it is unknown
            return None
    return model_api_of(model)


def choose(setting: str, api: ModelApi | None) -> Placement:
    """The placement for ``setting`` (``auto`` or a placement) and a model API."""
    if setting != "auto":
        return cast(Placement, setting)
    return "user" if api == "chat" else "system"


def place(data: ModelInputData, block: str, placement: Placement) -> ModelInputData:
    """A new ``ModelInputData`` with ``block`` placed (``data`` and its items unchanged)."""
    items = list(data.input)
    index = last_user_index(items)
    if placement == "instructions":
        instructions = f"{data.instructions}\n\n{block}" if data.instructions else block
        return ModelInputData(input=items, instructions=instructions)
    if placement == "user" and index is not None:
        current = cast(Mapping[str, Any], items[index])
        content = current.get("content")
        parts = (
            [{"type": "input_text", "text": content}]
            if isinstance(content, str)
            else list(content or [])
        )
        carrier = MemoryCarrier(current, [MemoryPart(type="input_text", text=block), *parts])
        items[index] = cast(TResponseInputItem, carrier)
        return ModelInputData(input=items, instructions=data.instructions)
    # system (or user with no user message to carry it)
    position = len(items) if index is None else index
    message = cast(TResponseInputItem, MemoryItem(role="system", content=block))
    return ModelInputData(
        input=[*items[:position], message, *items[position:]], instructions=data.instructions
    )


def strip(data: ModelInputData, instructions: str | None) -> None:
    """Take the block out of ``data`` in place (it was already handed to the SDK, which
    reads it again for a retry); ``instructions`` are the ones before placing."""
    kept: list[TResponseInputItem] = []
    for item in data.input:
        if isinstance(item, MemoryItem):
            continue
        if isinstance(item, MemoryCarrier):
            item = cast(TResponseInputItem, item.original)
        kept.append(item)
    data.input = kept
    data.instructions = instructions
