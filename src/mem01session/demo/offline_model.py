"""A deterministic answering model for offline demos: it answers only from its input.

It has no knowledge of its own. Its reply quotes what the memory block (its notes, its
dated quotes and the words of turns still queued) and the earlier user messages of the
transcript say about the question's words, so the answer shows exactly what the model was
given. Not a language model: use it
to see memory at work without an API key.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import Any

from agents.items import ItemHelpers, ModelResponse, TResponseInputItem, TResponseStreamEvent
from agents.models.interface import Model
from agents.usage import Usage
from openai.types.responses import ResponseOutputMessage, ResponseOutputText

from ..engine.parse import parse_block, parse_pending, parse_quotes
from ..engine.render import OPEN
from ..session.items import is_memory, item_text, memory_texts

_WORD = re.compile(r"[a-z0-9$]+")
_STOP = frozenset(
    "a an and are as at be before did do does for from had has have how i in is it me my "
    "now of on or so than that the then there this to was we what when where which who why "
    "with you your".split()
)
# Question words -> words the matching facts use.
_RELATED = {
    "live": {"lives", "live", "living", "moved", "home", "city"},
    "rent": {"rent", "pays", "pay", "month", "$"},
    "work": {"works", "work", "job", "employer"},
    "name": {"name", "called"},
}


def _terms(text: str) -> set[str]:
    words = {w for w in _WORD.findall(text.lower()) if w not in _STOP}
    for word in list(words):
        for stem, related in _RELATED.items():
            if word.startswith(stem):
                words |= related
    if "$" in text:
        words.add("$")
    return words


def compose_answer(items: list[TResponseInputItem], instructions: str | None = None) -> str:
    """The reply: what the input (and the instructions) say about the last user message's
    words. The memory block is read wherever it was placed."""
    messages = [i for i in items if isinstance(i, dict)]
    blocks = memory_texts(messages)
    if instructions and OPEN in instructions:
        blocks.append(instructions[instructions.index(OPEN) :])
    users = [item_text(m) for m in messages if m.get("role") == "user" and not is_memory(m)]
    if not users:
        return "I was given no question."
    question, earlier = users[-1], users[:-1]
    wanted = _terms(question)

    def relevant(text: str) -> bool:
        return bool(wanted & _terms(text))

    lines: list[str] = []
    for record in (r for b in blocks for r in parse_block(b)):
        if relevant(record.content):
            label = "current" if record.status == "active" else "no longer current"
            note = f"; {record.note}" if record.note else ""
            lines.append(f"{record.content} ({label}{note})")
    for quote in (q for b in blocks for q in parse_quotes(b)):
        if relevant(quote.content):
            who = "I said" if quote.role == "assistant" else "you said"
            lines.append(f'{who} on {quote.day}: "{quote.content}"')
    for said in (s for b in blocks for s in parse_pending(b)):
        if relevant(said):
            lines.append(f'you said moments ago: "{said}"')
    for text in earlier:
        if relevant(text):
            lines.append(f'you said earlier in this conversation: "{text}"')
    if not lines:
        return "I don't know: nothing I was shown answers that."
    return "From what I was shown: " + "; ".join(lines) + "."


class OfflineAnswerModel(Model):
    """An SDK ``Model`` that answers from its input alone (see module docstring)."""

    async def get_response(
        self,
        system_instructions: str | None,
        input: str | list[TResponseInputItem],
        *args: Any,
        **kwargs: Any,
    ) -> ModelResponse:
        # The items as given: converting them would drop the type that marks recalled memory.
        items = input if isinstance(input, list) else ItemHelpers.input_to_new_input_list(input)
        message = ResponseOutputMessage(
            id="offline-answer",
            type="message",
            role="assistant",
            status="completed",
            content=[
                ResponseOutputText(
                    type="output_text",
                    text=compose_answer(items, system_instructions),
                    annotations=[],
                )
            ],
        )
        return ModelResponse(output=[message], usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[TResponseStreamEvent]:
        raise NotImplementedError("OfflineAnswerModel answers with Runner.run, not streaming")
