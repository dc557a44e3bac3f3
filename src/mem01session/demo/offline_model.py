"""A deterministic answering model for offline demos: it answers only from its input.

It has no knowledge of its own. To a question it answers with what the memory block (its
notes, said to the user: "You live in Lisbon."; its dated quotes; the words of turns still
queued) and the earlier user messages of the transcript say about the question's words,
so the answer shows exactly what the model was given; to a statement it says "Noted.", to
small talk a word back. Not a language model: use it to see memory at work without an API
key.
"""

from __future__ import annotations

import re
import time
from collections.abc import AsyncIterator
from typing import Any

from agents.items import ItemHelpers, ModelResponse, TResponseInputItem, TResponseStreamEvent
from agents.models.interface import Model
from agents.usage import Usage
from openai.types.responses import (
    Response,
    ResponseCompletedEvent,
    ResponseCreatedEvent,
    ResponseOutputMessage,
    ResponseOutputText,
    ResponseTextDeltaEvent,
)

from ..engine.parse import parse_block, parse_pending, parse_quotes
from ..engine.render import OPEN
from ..engine.small_talk import is_small_talk
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
    "rent": {"rent", "pays", "pay", "$"},
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


# A note's first verb, said to the user: now, and of what held before.
_VERBS = {
    "lives": ("live", "lived"), "pays": ("pay", "paid"), "works": ("work", "worked"),
    "has": ("have", "had"), "is": ("are", "were"), "likes": ("like", "liked"),
    "loves": ("love", "loved"), "owns": ("own", "owned"), "rents": ("rent", "rented"),
    "speaks": ("speak", "spoke"), "plays": ("play", "played"), "drives": ("drive", "drove"),
    "prefers": ("prefer", "preferred"), "dislikes": ("dislike", "disliked"),
    "studies": ("study", "studied"), "uses": ("use", "used"), "keeps": ("keep", "kept"),
}  # fmt: skip
_QUESTION = re.compile(r"^(?:who|what|when|where|why|how|which|do|does|did|is|are|am|can|could"
                       r"|will|would|should|have|has)\b", re.IGNORECASE)  # fmt: skip


# The user, as a note names them (singular they), said to them.
_THEY = {"their": "your", "theirs": "yours", "them": "you", "themselves": "yourself",
         "themself": "yourself", "they": "you"}  # fmt: skip
_THEY_WORD = re.compile(r"\b(?:" + "|".join(_THEY) + r")\b")


def _to_you(statement: str, *, past: bool = False) -> str:
    """A note said to the user: "Lives in Lisbon" -> "you live in Lisbon" (or "lived");
    "Keeps bees on their roof" -> "you keep bees on your roof"."""
    first, _, rest = statement.partition(" ")
    verbs = _VERBS.get(first.lower())
    if verbs is None:
        return statement[:1].lower() + statement[1:] if past else statement
    rest = _THEY_WORD.sub(lambda m: _THEY[m.group()], rest)
    return f"you {verbs[1 if past else 0]} {rest}".strip()


def _sentence(text: str) -> str:
    text = text[:1].upper() + text[1:]
    return text if text.endswith((".", "!", "?", '"')) else f"{text}."


def _word_back(said: str) -> str | None:
    """A word back to thanks, a greeting or a goodbye (None: ``said`` is none of them)."""
    first = said.lstrip().split(maxsplit=1)[0].strip(",.!?").lower() if said.strip() else ""
    if first in ("thanks", "thank", "thx", "cheers"):
        return "You're welcome!"
    if first in ("bye", "goodbye", "later"):
        return "Goodbye!"
    if first in ("hi", "hello", "hey", "hiya", "morning", "good"):
        return "Hello! How can I help?"
    return None


def compose_answer(items: list[TResponseInputItem], instructions: str | None = None) -> str:
    """The reply: to a question, what the input (and the instructions) say about its
    words, said to the user; to a statement, an acknowledgement; to small talk, a word back.
    The memory block is read wherever it was placed."""
    messages = [i for i in items if isinstance(i, dict)]
    blocks = memory_texts(messages)
    if instructions and OPEN in instructions:
        blocks.append(instructions[instructions.index(OPEN) :])
    users = [item_text(m) for m in messages if m.get("role") == "user" and not is_memory(m)]
    if not users:
        return "I was given no question."
    question, earlier = users[-1], users[:-1]
    if "?" not in question and not _QUESTION.match(question.strip()):
        return (_word_back(question) or "Okay.") if is_small_talk(question) else "Noted."
    wanted = _terms(question)

    def relevant(text: str) -> bool:
        return bool(wanted & _terms(text))

    said: list[str] = []
    records = [r for b in blocks for r in parse_block(b) if relevant(r.content)]
    for record in records:
        if record.status == "active":
            said.append(_sentence(_to_you(record.content)))
    for record in records:
        if record.status != "active":
            when = f" ({record.note})" if record.note else ""
            said.append(_sentence(f"before that, {_to_you(record.content, past=True)}{when}"))
    for quote in (q for b in blocks for q in parse_quotes(b)):
        if relevant(quote.content):
            who = "I said" if quote.role == "assistant" else "you said"
            said.append(f'On {quote.day} {who}: "{quote.content}"')
    for words in (w for b in blocks for w in parse_pending(b)):
        if relevant(words):
            said.append(f'You said moments ago: "{words}"')
    for text in earlier:
        if relevant(text):
            said.append(f'Earlier here you said: "{text}"')
    if not said:  # "Hi! Can you help me?" is answered as a greeting
        return _word_back(question) or "I don't know: nothing I was shown answers that."
    return " ".join(said)


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

    async def stream_response(
        self,
        system_instructions: str | None,
        input: str | list[TResponseInputItem],
        *args: Any,
        **kwargs: Any,
    ) -> AsyncIterator[TResponseStreamEvent]:
        """The same answer, streamed a word at a time (``Runner.run_streamed``)."""
        answer = await self.get_response(system_instructions, input, *args, **kwargs)
        [message] = answer.output
        assert isinstance(message, ResponseOutputMessage)
        [part] = message.content
        assert isinstance(part, ResponseOutputText)
        done = Response(
            id="offline-answer",
            created_at=time.time(),
            model="offline",
            object="response",
            output=[message],
            parallel_tool_calls=False,
            tool_choice="none",
            tools=[],
        )
        started = done.model_copy(update={"output": [], "status": "in_progress"})
        n = 0
        yield ResponseCreatedEvent(type="response.created", response=started, sequence_number=n)
        for word in re.findall(r"\S+\s*", part.text):
            n += 1
            yield ResponseTextDeltaEvent(
                type="response.output_text.delta", item_id=message.id, output_index=0,
                content_index=0, delta=word, logprobs=[], sequence_number=n,
            )  # fmt: skip
        yield ResponseCompletedEvent(
            type="response.completed", response=done, sequence_number=n + 1
        )
