"""Where the memory block goes in the model input: never with more authority than the
user's own message (by default), and where every chat template takes it.

Everything in the block came from what users said (and, with ``episodes="all"``, what the
assistant answered them): a pasted email, a page the user forwarded, words said once to
plant an instruction. Placed in a system message, those words would come back with the
system's authority in every later conversation (the "memory poisoning" of OWASP's agentic
threats). So ``auto`` places it as the user's own words, and a placement a server refuses
falls back only to one with no more authority than the one asked for.

``user`` (what ``auto`` chooses)
    In front of the user's words in a copy of the current user message (a
    :class:`~mem01session.session.items.MemoryCarrier`; the SDK's own item is never
    changed, so the transcript never holds it), in the same text, a blank line between
    them: templates trim the ends of each part and join parts with nothing (Gemma's), or
    read only the first part, and any of that would glue the block to the question, or
    lose one of them, were they separate parts. The block's header marks it as recalled
    data, not the user's words. The roles stay exactly as the SDK made them, and templates
    that drop system messages (llama.cpp's built-in ``gemma`` format) keep it. A call with
    no user message gets no block.
``instructions`` (only when asked for: system authority)
    Appended to the agent's instructions for this call only: one leading system message
    (Chat Completions) or the ``instructions`` field (Responses). Lost by templates that
    drop system messages.
``system`` (only when asked for: system authority)
    A system message of its own just before the current user message (a
    :class:`~mem01session.session.items.MemoryItem`). The Responses API takes system
    messages anywhere; many chat templates do not: Gemma's and Mistral's accept one
    system message, first, then strict user/assistant alternation, and raise
    ("Conversation roles must alternate") on a second one.


**A refused placement is remembered.** When a server refuses a call because of where the
block was (:mod:`.fallback`: the roles, the template, the content format), that placement
is not used again for that model (its class, name and server) in this process: later runs
place the block the next way in :data:`LADDER`, and when every way was refused they go
without it, saying so. So a refusal costs one rejected call per process and model, not one
per run (runs already in flight when it comes back may meet it once each). A refusal for
the context size is not remembered: it depends on how long the conversation is.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, cast

from agents import Agent, RunConfig
from agents.items import TResponseInputItem
from agents.models.interface import Model
from agents.run_config import ModelInputData

from .._forks import ForkSafeLock
from .items import SEPARATOR, MemoryCarrier, MemoryItem, MemoryPart, last_user_index

Placement = Literal["system", "user", "instructions"]

LADDER: tuple[Placement, ...] = ("user", "instructions", "system")
"""After a refusal, the next placement tried: the one every template takes first."""
AUTHORITY: dict[Placement, int] = {"user": 0, "instructions": 1, "system": 1}
"""How much authority a placement gives the block: a refused placement falls back only to
one with no more than it."""

_refused: dict[str, set[Placement]] = {}  # model key -> placements its server refused
_refused_lock = ForkSafeLock()  # runs on any thread's loop may record one


def model_of(agent: Agent[Any], config: RunConfig) -> Model | None:
    """The model the SDK uses for ``agent`` under ``config`` (as the SDK resolves it: the
    run's model, else the agent's, names through the provider); None if it cannot tell."""
    model: object = config.model if config.model is not None else agent.model
    if isinstance(model, Model):
        return model
    try:
        return config.model_provider.get_model(cast(str | None, model))
    except Exception:  # the SDK reports a model it cannot make; here it is unknown
        return None


def model_key(model: object) -> str:
    """What makes two model objects "the same model" for a refusal: the class, the model's
    name and the server it talks to (a provider makes a new object per run)."""
    name = getattr(model, "model", None)
    if isinstance(name, Model):  # a wrapper (the demo's RecordingModel): the model it wraps
        return model_key(name)
    client = getattr(model, "_client", None)
    server = getattr(client, "base_url", None)
    return f"{type(model).__qualname__}:{name if isinstance(name, str) else ''}@{server or ''}"


def refused(key: str) -> frozenset[Placement]:
    """The placements a server refused for the model ``key`` in this process."""
    with _refused_lock:
        return frozenset(_refused.get(key, ()))


def remember_refusal(key: str, placement: Placement) -> None:
    """The server of model ``key`` refused ``placement``: not used again for it."""
    with _refused_lock:
        _refused.setdefault(key, set()).add(placement)


def forget_refusals() -> None:
    """Forget every refusal remembered (tests; a server whose template was changed)."""
    with _refused_lock:
        _refused.clear()


def choose(setting: str, refusals: frozenset[Placement] = frozenset()) -> Placement | None:
    """The placement for ``setting`` (``auto``, which is ``user``, or a placement), past
    the ones refused for the model, never one with more authority than ``setting``'s
    (None: none is left)."""
    first: Placement = "user" if setting == "auto" else cast(Placement, setting)
    if first not in refusals:
        return first
    allowed = AUTHORITY[first]
    return next((p for p in LADDER if p not in refusals and AUTHORITY[p] <= allowed), None)


def place(data: ModelInputData, block: str, placement: Placement) -> ModelInputData:
    """A new ``ModelInputData`` with ``block`` placed (``data`` and its items unchanged)."""
    items = list(data.input)
    index = last_user_index(items)
    if placement == "instructions":
        instructions = f"{data.instructions}\n\n{block}" if data.instructions else block
        return ModelInputData(input=items, instructions=instructions)
    if placement == "user":
        if index is None:  # nothing of the user's to carry it: no block
            return ModelInputData(input=items, instructions=data.instructions)
        current = cast(Mapping[str, Any], items[index])
        carrier = MemoryCarrier(current, _in_front(current.get("content"), block), block)
        items[index] = cast(TResponseInputItem, carrier)
        return ModelInputData(input=items, instructions=data.instructions)
    position = len(items) if index is None else index
    message = cast(TResponseInputItem, MemoryItem(role="system", content=block))
    return ModelInputData(
        input=[*items[:position], message, *items[position:]], instructions=data.instructions
    )


def _in_front(content: Any, block: str) -> Any:
    """A user message's content with ``block`` in front of its words: in the same text,
    after a blank line (a string stays a string); a part of its own only when the message
    does not begin with text (an image, say)."""
    if isinstance(content, str):
        return f"{block}{SEPARATOR}{content}" if content else block
    parts = list(content or [])
    first = parts[0] if parts else None
    if isinstance(first, Mapping) and first.get("type") == "input_text":
        return [MemoryPart(first, block, str(first.get("text") or "")), *parts[1:]]
    return [MemoryPart({"type": "input_text"}, block), *parts]


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
