"""An extractor backed by an OpenAI (or OpenAI-compatible) chat model.

Chat Completions with a strict JSON schema (structured outputs) first. A server that
refuses it, with whatever status (llama.cpp's Python server answers 500), gets JSON mode
with the schema in the prompt, then plain text read tolerantly
(:mod:`~mem01session.extraction.formats`); the extractor remembers the step that worked
and a warning says so, once per step. Whatever the mode, the answer is validated locally
before any op leaves this module.

Every request carries ``max_tokens`` (``MEM01_LLM_MAX_TOKENS``) and a timeout
(``MEM01_LLM_TIMEOUT``), so a rambling model cannot hold a job for minutes. The model comes
from ``MEM01_LLM_MODEL`` (default ``gpt-4.1-mini``); the prompt is the versioned file
``prompts/extract_v2.md`` (``extract_v1``, without the rule on
instructions addressed to the assistant, stays loadable: ``prompt_version=``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime
from importlib import resources

import httpx2
import openai
from openai import AsyncOpenAI
from openai.types.chat import ChatCompletion, ChatCompletionMessageParam

from ..checks import check_instance, check_model_options, check_seconds
from ..config import Settings
from ..engine.passages import tail
from ..errors import ConfigError, ExtractionError
from ..logs import get_logger
from ..loops import PerLoop
from ..secrets.redaction import redact
from ..tokens import default_token_counter
from .answer import OP_SCHEMA, parse_ops
from .base import WAITING_AFTER, Candidate, Extraction, Turn
from .formats import (
    LABELS,
    NOTES,
    Mode,
    next_mode,
    rejects_format,
    request_options,
    wants_completion_tokens,
)
from .hygiene import screen

log = get_logger(__name__)

PROMPT_VERSION = "extract_v2"
Sleep = Callable[[float], Awaitable[None]]


def load_prompt(version: str = PROMPT_VERSION) -> str:
    """The system prompt shipped with the package."""
    path = resources.files("mem01session.extraction").joinpath(f"prompts/{version}.md")
    return path.read_text(encoding="utf-8")


def users_time(turn: Turn, now: datetime) -> datetime:
    """``now`` in the time zone the turn was stamped in (the user's, when their session
    names one), so that the dates the model computes are the user's days."""
    zone = turn.observed_at.tzinfo
    return now.astimezone(zone) if zone is not None else now


def render_request(turn: Turn, candidates: Sequence[Candidate], now: datetime) -> str:
    """The user message: current time, candidates under their aliases, the end of the
    assistant message said before the turn (what a short answer answers), the role-tagged
    turn (times and dates in the user's time zone, see :func:`users_time`)."""
    now = users_time(turn, now)
    lines = [f"Current time: {now.isoformat()}", "", "Candidate beliefs (active):"]
    for c in candidates:
        extra = f" [{c.key}]" if c.key else ""
        since = ""
        if c.valid_from is not None:
            start = c.valid_from.astimezone(now.tzinfo or UTC)
            since = f" (since {start.date().isoformat()})"
        lines.append(f"{c.alias}: {c.content}{extra}{since}")
    if not candidates:
        lines.append("(none)")
    if turn.before:
        lines += ["", "Said before the turn, for context only (not what the user said):"]
        lines.append(f"assistant: {_end(turn.before)}")
    lines += ["", f"Turn (observed {turn.observed_at.isoformat()}):"]
    lines += [f"{m.role}: {m.text}" for m in turn.messages]
    return "\n".join(lines)


BEFORE_TOKENS = 100
"""The most of :attr:`Turn.before` a request shows, in tokens: its last sentences (where
a question is), marked as cut when they are not all of it."""


def _end(text: str) -> str:
    kept = tail(text, default_token_counter(), BEFORE_TOKENS)
    return kept if kept == " ".join(text.split()) else f"... {kept}"


class OpenAIExtractor:
    """Proposes lifecycle ops with an OpenAI chat model; see the module docstring.

    Pass ``client`` (an ``AsyncOpenAI``) or ``http_client`` (an ``httpx2.AsyncClient``) to
    route requests elsewhere, e.g. a fake server in tests. ``max_tokens`` and ``timeout``
    default to ``MEM01_LLM_MAX_TOKENS`` and ``MEM01_LLM_TIMEOUT``. 429 and 5xx answers and
    connection errors are retried ``max_retries`` times with exponential backoff
    (``backoff`` seconds, doubled each time, capped at 30 s; ``sleep`` is injectable); an
    answer that refuses the request's JSON format is not retried as such: the next format
    is tried at once. A timeout fails the call at once with a retryable
    :class:`ExtractionError`; the session's job retry decides what happens next.

    The client it makes is made once per event loop (its connections belong to one); a
    client you give is used on whichever loop calls :meth:`extract` (a ``Memory``'s own).
    """

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        client: AsyncOpenAI | None = None,
        http_client: httpx2.AsyncClient | None = None,
        model: str | None = None,
        max_tokens: int | None = None,
        timeout: float | None = None,
        max_retries: int = 3,
        backoff: float = 0.5,
        sleep: Sleep = asyncio.sleep,
        prompt_version: str = PROMPT_VERSION,
    ) -> None:
        check_instance("settings", settings, Settings)
        check_model_options(model, timeout, max_tokens, max_retries)
        check_seconds("backoff", backoff)
        settings = settings or Settings.from_env()
        self.model = model or settings.llm_model
        self.max_tokens = max_tokens or settings.llm_max_tokens
        self.timeout = timeout or settings.llm_timeout
        self.max_retries = max_retries
        self.backoff = backoff
        self._sleep = sleep
        self.prompt_version = prompt_version
        self._prompt = load_prompt(prompt_version)
        self.mode = Mode.STRUCTURED  # moves down when the server refuses it, and stays
        self._tokens_field = "max_tokens"  # or max_completion_tokens, if the server says so
        self._given: AsyncOpenAI | None = None
        if client is None:
            api_key = settings.openai_api_key
            if not api_key and not settings.openai_base_url:
                raise ConfigError("OPENAI_API_KEY is not set; the OpenAI extractor needs it")

            def make() -> AsyncOpenAI:
                return AsyncOpenAI(
                    api_key=api_key or "unused",  # local OpenAI-compatible servers ignore it
                    base_url=settings.openai_base_url,
                    timeout=self.timeout,
                    max_retries=0,
                    http_client=http_client,
                )

            if http_client is not None:
                self._given = make()
        else:
            self._given = client.with_options(max_retries=0)
        self._clients: PerLoop[AsyncOpenAI] | None = None
        if self._given is None:
            self._clients = PerLoop(make, AsyncOpenAI.close)

    @property
    def name(self) -> str:
        return f"openai:{self.model}:{self.prompt_version}"

    @property
    def _client(self) -> AsyncOpenAI:
        """The client for the running loop."""
        if self._clients is not None:
            return self._clients.get()
        assert self._given is not None
        return self._given

    async def aclose(self) -> None:
        """Close the HTTP clients this extractor made (not one it was given)."""
        if self._clients is not None:
            await self._clients.aclose()

    async def forget_loop(self) -> None:
        """The running loop is about to end: close the client made for it."""
        if self._clients is not None:
            await self._clients.forget_loop()

    @property
    def json_mode(self) -> bool:
        """Whether the server refused structured outputs (JSON mode or plain text now)."""
        return self.mode is not Mode.STRUCTURED

    def __repr__(self) -> str:
        return f"OpenAIExtractor(model={self.model!r}, mode={self.mode.value!r})"

    async def extract(
        self, turn: Turn, candidates: Sequence[Candidate], now: datetime
    ) -> Extraction:
        """Ask the model, validate its answer against the candidates, screen it."""
        request = render_request(turn, candidates, now)
        response, mode = await self._call(request)
        if not isinstance(response, ChatCompletion):  # the client hands back what it got
            raise self._not_an_api()
        choice = response.choices[0] if response.choices else None
        if choice is None or choice.message is None:
            raise ExtractionError("the model returned no message")
        if getattr(choice.message, "refusal", None):
            raise ExtractionError("the model refused to extract from this turn")
        if choice.finish_reason == "length":
            raise ExtractionError(
                f"the model's answer was cut off at {self.max_tokens} tokens "
                "(finish_reason=length; MEM01_LLM_MAX_TOKENS raises the limit)"
            )
        # A date the model gives is a day of the user's (midnight there).
        ops = parse_ops(
            choice.message.content or "", {c.alias for c in candidates}, users_time(turn, now)
        )
        screened = screen(ops)
        usage: dict[str, int] = {}
        if response.usage is not None:
            usage = {
                "prompt_tokens": response.usage.prompt_tokens,
                "completion_tokens": response.usage.completion_tokens,
                "total_tokens": response.usage.total_tokens,
            }
        return Extraction(ops=screened.ops, usage=usage, notes=NOTES[mode] + screened.notes)

    async def _call(self, request: str) -> tuple[ChatCompletion, Mode]:
        attempt = 0
        while True:
            mode = self.mode
            try:
                return await self._create(request, mode), mode
            except openai.APITimeoutError:
                raise ExtractionError(
                    f"the model API did not answer within {self.timeout:g} s (MEM01_LLM_TIMEOUT)",
                    retryable=True,
                ) from None
            except openai.APIStatusError as exc:
                if self._adapt(exc, mode):
                    continue  # the request changes shape: not an attempt that failed
                if exc.status_code != 429 and exc.status_code < 500:
                    raise ExtractionError(
                        f"the model API rejected the request: {_brief(exc)}"
                    ) from None
                failure: openai.APIError = exc
            except openai.APIConnectionError as exc:
                failure = exc
            except json.JSONDecodeError:  # said to be JSON, and was not
                raise self._not_an_api() from None
            if attempt >= self.max_retries:
                raise ExtractionError(
                    f"the model API failed after {attempt + 1} attempts: {_brief(failure)}",
                    retryable=True,
                ) from None
            WAITING_AFTER.set(_brief(failure))
            await self._sleep(_delay(failure, self.backoff, attempt))
            WAITING_AFTER.set(None)
            attempt += 1

    def _not_an_api(self) -> ExtractionError:
        """The error for an answer that is no chat completion (a web page, say)."""
        return ExtractionError(
            f"the model API at {redact(str(self._client.base_url))} answered with something "
            "other than a chat completion (a web page?); OPENAI_BASE_URL must be the API's "
            "address, which often ends in /v1",
            retryable=True,
        )

    def _adapt(self, exc: openai.APIStatusError, mode: Mode) -> bool:
        """Change the request's shape if ``exc`` refuses it (True: try again at once)."""
        if self._tokens_field == "max_tokens" and wants_completion_tokens(exc):
            self._tokens_field = "max_completion_tokens"
            return True
        if mode is not self.mode:
            return True  # another call moved on meanwhile: try the new mode
        if not rejects_format(exc, mode):
            return False
        following = next_mode(mode)
        if following is None:
            return False
        self.mode = following
        log.warning(
            "extraction: %s at %s refused %s (%s); falling back to %s from now on, with "
            "local validation",
            self.model,
            self._client.base_url,
            mode.value,
            _brief(exc),
            LABELS[following],
        )
        return True

    async def _create(self, request: str, mode: Mode) -> ChatCompletion:
        system, fields = request_options(mode, self._prompt)
        messages: list[ChatCompletionMessageParam] = [
            {"role": "system", "content": system},
            {"role": "user", "content": request},
        ]
        return await self._client.chat.completions.create(
            model=self.model,
            messages=messages,
            temperature=0,
            timeout=self.timeout,
            extra_body={self._tokens_field: self.max_tokens, **fields},
        )


def _brief(exc: openai.APIError) -> str:
    status = getattr(exc, "status_code", None)
    message = " ".join(str(exc.message).split())
    if status and message == f"Error code: {status}" and exc.body:  # said only in the body
        message += f" - {exc.body}"
    return f"HTTP {status}: {message[:300]}" if status else message[:300]


def _delay(exc: openai.APIError, base: float, attempt: int) -> float:
    delay = base * (2**attempt)
    response = getattr(exc, "response", None)
    if isinstance(response, httpx2.Response):
        with contextlib.suppress(ValueError):
            delay = max(delay, float(str(response.headers.get("retry-after", ""))))
    return float(min(delay, 30.0))


__all__ = ["OP_SCHEMA", "OpenAIExtractor", "load_prompt", "parse_ops", "render_request"]
