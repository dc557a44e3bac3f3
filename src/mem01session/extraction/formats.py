"""How an extraction request asks for JSON, and how to tell that a server refused the way.

Three modes, tried in this order; an extractor moves down one step when a server refuses
the current one, and stays there:

1. ``json_schema``: structured outputs, the schema enforced by the server (OpenAI, vLLM,
   Ollama, recent llama.cpp).
2. ``json_object``: JSON mode, with the schema in the prompt and in ``response_format``'s
   ``schema`` field, the extension llama.cpp's server and ``llama-cpp-python`` turn into a
   grammar (servers without it ignore the field).
3. ``text``: no ``response_format`` at all; the schema is in the prompt and the answer is
   read tolerantly (:func:`~mem01session.extraction.answer.read_json`).

A refusal is an HTTP error whose body names the request's format (``response_format``,
``json_schema``, ``json_object``, a schema or grammar): servers answer 400, 422 or 500 for
it. A server error (5xx) counts only when it names the request's own fields or a grammar
(llama-cpp-python's 500 quotes ``response_format``): one that merely says "schema" (a
crash "while loading the schema cache") is retried as the server error it is, since a
refusal is remembered for good. A 404 or 422 to a format request counts too, unless it is
about the model.
"""

from __future__ import annotations

import enum
import json
from typing import Any

import openai

from .answer import OP_SCHEMA


class Mode(enum.Enum):
    """How the request asks for JSON (see the module docstring)."""

    STRUCTURED = "json_schema"
    JSON_OBJECT = "json_object"
    TEXT = "text"


_ORDER = (Mode.STRUCTURED, Mode.JSON_OBJECT, Mode.TEXT)
_FORMAT_WORDS = (
    "response_format",
    "json_schema",
    "json_object",
    "structured output",
    "schema",
    "grammar",
    "guided",
)
# What a server error (5xx) must name to be a refusal: the request's fields, or a grammar.
_SERVER_ERROR_WORDS = ("response_format", "json_schema", "json_object", "grammar")
LABELS = {
    Mode.STRUCTURED: "structured outputs (json_schema)",
    Mode.JSON_OBJECT: "JSON mode (json_object)",
    Mode.TEXT: "plain text",
}
NOTES = {
    Mode.STRUCTURED: (),
    Mode.JSON_OBJECT: ("json mode (no structured outputs)",),
    Mode.TEXT: ("plain text mode (neither structured outputs nor JSON mode)",),
}


def next_mode(mode: Mode) -> Mode | None:
    """The mode to try after ``mode`` was refused (None: nothing is left)."""
    index = _ORDER.index(mode)
    return _ORDER[index + 1] if index + 1 < len(_ORDER) else None


def request_options(mode: Mode, prompt: str) -> tuple[str, dict[str, Any]]:
    """The system prompt and the request's JSON fields for ``mode``."""
    if mode is Mode.STRUCTURED:
        response_format = {
            "type": "json_schema",
            "json_schema": {"name": "belief_ops", "strict": True, "schema": OP_SCHEMA},
        }
        return prompt, {"response_format": response_format}
    schema = json.dumps(OP_SCHEMA)
    if mode is Mode.JSON_OBJECT:
        system = f"{prompt}\nAnswer with one JSON object matching this JSON schema:\n{schema}"
        return system, {"response_format": {"type": "json_object", "schema": OP_SCHEMA}}
    system = (
        f"{prompt}\nAnswer with one JSON object matching this JSON schema, and nothing "
        f"else (no prose, no code fence):\n{schema}"
    )
    return system, {}


def error_text(exc: openai.APIStatusError) -> str:
    """What the server said: its message and its body, in lower case."""
    return f"{exc.message} {exc.body!r}".lower()


def rejects_format(exc: openai.APIStatusError, mode: Mode) -> bool:
    """Whether ``exc`` refuses the way ``mode`` asks for JSON (see the module docstring)."""
    if mode is Mode.TEXT:
        return False  # nothing was asked for: the error is about something else
    text = error_text(exc)
    if exc.status_code >= 500:
        return any(word in text for word in _SERVER_ERROR_WORDS)
    if any(word in text for word in _FORMAT_WORDS):
        return True
    if exc.status_code in (404, 422):
        return "model" not in text  # "model 'x' not found" is not about the format
    return False


def wants_completion_tokens(exc: openai.APIStatusError) -> bool:
    """Whether the server wants ``max_completion_tokens`` instead of ``max_tokens``
    (OpenAI's reasoning models)."""
    text = error_text(exc)
    return "max_tokens" in text and "max_completion_tokens" in text
