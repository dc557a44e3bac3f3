"""Summarizers for :class:`~mem01session.shortterm.SummarizingSession`.

* :class:`OpenAISummarizer`: one chat-completions call (any OpenAI-compatible server), the
  prompt in ``prompts/summarize_v1.md``.
* :class:`OfflineSummarizer`: deterministic, no network: a bullet list of what was said.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from importlib.resources import files
from typing import Any, Protocol, runtime_checkable

from agents.items import TResponseInputItem

from ..checks import check_model_options, check_positive_int
from ..config import Settings
from ..session.items import item_text

PROMPT_FILE = "summarize_v1.md"


@runtime_checkable
class Summarizer(Protocol):
    """Turns a transcript prefix into a short text that stands in for it."""

    async def summarize(self, items: Sequence[TResponseInputItem]) -> str:
        """A summary of ``items`` (plain SDK input items, oldest first)."""
        ...


def load_prompt(name: str = PROMPT_FILE) -> str:
    """A prompt shipped in ``mem01session/shortterm/prompts``."""
    return files("mem01session.shortterm").joinpath("prompts", name).read_text("utf-8").strip()


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: max(limit - 1, 0)] + "…"


def render_line(
    item: TResponseInputItem, max_chars: int, context_chars: int | None = None
) -> str | None:
    """One transcript line for ``item``, or None for items that carry no readable content.

    System and developer messages (an earlier summary among them) are clipped to
    ``context_chars`` instead of ``max_chars`` when given.
    """
    if not isinstance(item, Mapping):
        return None
    kind = item.get("type", "message")
    if kind == "message":
        text = item_text(item).strip()
        if not text:
            return None
        role = str(item.get("role", ""))
        label = {"user": "User", "assistant": "Assistant"}.get(role, "Context")
        limit = max_chars if label != "Context" or context_chars is None else context_chars
        return f"{label}: {_clip(text, limit)}"
    if kind == "function_call":
        args = _clip(str(item.get("arguments", "")), max_chars)
        return f"Tool call: {item.get('name', '?')}({args})"
    if isinstance(kind, str) and kind.endswith("_output"):
        return f"Tool result: {_clip(_output_text(item.get('output')), max_chars)}"
    return None


def _output_text(output: Any) -> str:
    if isinstance(output, str):
        return output
    if isinstance(output, Sequence):
        return " ".join(
            str(part.get("text", "")) for part in output if isinstance(part, Mapping)
        ).strip()
    return str(output)


def render_transcript(items: Sequence[TResponseInputItem], max_chars_per_item: int = 2000) -> str:
    """``items`` as labelled lines ("User: …", "Tool call: …"), one per readable item."""
    lines = (render_line(item, max_chars_per_item) for item in items)
    return "\n".join(line for line in lines if line)


EARLIER_SUMMARY = "Summary of the earlier conversation:\n"
"""How a summary already made is given to the summarizer again (a system item), with the
items said since, when the conversation is summarized anew."""
_OFFLINE_HEADER = re.compile(
    r"^Earlier in this conversation \(offline summary(?:, (\d+) older lines omitted)?\):$"
)


def _earlier_bullets(item: TResponseInputItem) -> tuple[list[str], int] | None:
    """The bullets of an offline summary given back as ``item`` (and how many older lines
    it had omitted); None when ``item`` is no such summary."""
    if not isinstance(item, Mapping) or item.get("role") != "system":
        return None
    content = item.get("content")
    if not isinstance(content, str) or not content.startswith(EARLIER_SUMMARY):
        return None
    header, _, rest = content[len(EARLIER_SUMMARY) :].partition("\n")
    found = _OFFLINE_HEADER.match(header)
    if found is None:
        return None
    return [line for line in rest.split("\n") if line.startswith("- ")], int(found[1] or 0)


class OfflineSummarizer:
    """Deterministic summary: a bullet per readable item, clipped, newest kept when long;
    a summary it made before, given back, is carried on line by line (not summarized as
    one more item, which nested each summary in the next and kept only its start)."""

    def __init__(self, *, max_chars_per_item: int = 200, max_chars: int = 2000) -> None:
        check_positive_int("max_chars_per_item", max_chars_per_item)
        check_positive_int("max_chars", max_chars)
        self._per_item = max_chars_per_item
        self._max_chars = max_chars

    def __repr__(self) -> str:
        return f"OfflineSummarizer(max_chars={self._max_chars})"

    async def summarize(self, items: Sequence[TResponseInputItem]) -> str:
        bullets: list[str] = []
        omitted = 0
        for item in items:
            earlier = _earlier_bullets(item)
            if earlier is not None:
                bullets += earlier[0]
                omitted += earlier[1]
            elif line := render_line(item, self._per_item, self._max_chars):
                bullets.append(f"- {line}")
        kept: list[str] = []
        size = 0
        for bullet in reversed(bullets):
            if kept and size + len(bullet) + 1 > self._max_chars:
                break
            kept.append(bullet)
            size += len(bullet) + 1
        dropped = omitted + len(bullets) - len(kept)
        header = "Earlier in this conversation (offline summary"
        header += f", {dropped} older lines omitted):" if dropped else "):"
        return "\n".join([header, *reversed(kept)])


class OpenAISummarizer:
    """Summary by an OpenAI chat model (or any compatible server at ``base_url``)."""

    def __init__(
        self,
        model: str | None = None,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        client: Any = None,
        timeout: float = 30.0,
        max_retries: int = 2,
        max_output_tokens: int = 400,
        prompt: str | None = None,
    ) -> None:
        from openai import AsyncOpenAI

        check_model_options(
            model, timeout, max_output_tokens, max_retries, tokens_name="max_output_tokens"
        )
        settings = Settings.from_env() if model is None else None
        self._model = model or (settings.llm_model if settings else "")
        self._timeout = timeout
        self._max_output_tokens = max_output_tokens
        self._prompt = prompt or load_prompt()
        self._client = client or AsyncOpenAI(
            api_key=api_key, base_url=base_url, timeout=timeout, max_retries=max_retries
        )

    def __repr__(self) -> str:
        return f"OpenAISummarizer(model={self._model!r})"

    @property
    def model(self) -> str:
        return self._model

    async def summarize(self, items: Sequence[TResponseInputItem]) -> str:
        response = await self._client.chat.completions.create(
            model=self._model,
            messages=[
                {"role": "system", "content": self._prompt},
                {"role": "user", "content": render_transcript(items)},
            ],
            max_tokens=self._max_output_tokens,
            timeout=self._timeout,
        )
        text = (response.choices[0].message.content or "").strip() if response.choices else ""
        if not text:
            raise RuntimeError(f"summarizer model {self._model!r} returned an empty summary")
        return text
