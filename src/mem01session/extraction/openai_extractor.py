"""An extractor backed by an OpenAI (or OpenAI-compatible) chat model.

Chat Completions with a strict JSON schema (structured outputs). Servers that reject
``response_format={"type": "json_schema", ...}`` (many vLLM, Ollama or llama.cpp builds)
get JSON mode plus the schema in the prompt instead; a warning says so once per extractor.
Whatever the mode, the answer is validated locally before any op leaves this module.

The model comes from ``MEM01_LLM_MODEL`` (default ``gpt-4.1-mini``); the prompt is the
versioned file ``prompts/extract_v1.md``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import datetime
from importlib import resources
from typing import Any

import httpx2
import openai
from openai import AsyncOpenAI
from openai.types.chat import ChatCompletion, ChatCompletionMessageParam
from openai.types.shared_params import ResponseFormatJSONObject, ResponseFormatJSONSchema

from ..config import Settings
from ..engine.ops import OP_KINDS, Op
from ..errors import ConfigError, ExtractionError
from ..logs import get_logger
from ..queue.extractor import Candidate, Extraction
from ..queue.turns import Turn
from .hygiene import screen

log = get_logger(__name__)

PROMPT_VERSION = "extract_v1"
_NULLABLE_STRING: dict[str, Any] = {"type": ["string", "null"]}
OP_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["ops"],
    "properties": {
        "ops": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": [
                    "op",
                    "target",
                    "targets",
                    "content",
                    "key",
                    "confidence",
                    "evidence",
                    "reason",
                    "valid_from",
                ],
                "properties": {
                    "op": {"type": "string", "enum": list(OP_KINDS)},
                    "target": {**_NULLABLE_STRING, "description": "candidate alias, e.g. b1"},
                    "targets": {"type": "array", "items": {"type": "string"}},
                    "content": _NULLABLE_STRING,
                    "key": _NULLABLE_STRING,
                    "confidence": {"type": ["number", "null"]},
                    "evidence": _NULLABLE_STRING,
                    "reason": _NULLABLE_STRING,
                    "valid_from": {**_NULLABLE_STRING, "description": "ISO 8601 date"},
                },
            },
        }
    },
}
_FIELDS = frozenset(OP_SCHEMA["properties"]["ops"]["items"]["properties"])
_FENCE = re.compile(r"^\s*```(?:json)?\s*|\s*```\s*$")

Sleep = Callable[[float], Awaitable[None]]


def load_prompt(version: str = PROMPT_VERSION) -> str:
    """The system prompt shipped with the package."""
    path = resources.files("mem01session.extraction").joinpath(f"prompts/{version}.md")
    return path.read_text(encoding="utf-8")


def render_request(turn: Turn, candidates: Sequence[Candidate], now: datetime) -> str:
    """The user message: current time, candidates under their aliases, the role-tagged turn."""
    lines = [f"Current time: {now.isoformat()}", "", "Candidate beliefs (active):"]
    for c in candidates:
        extra = f" [{c.key}]" if c.key else ""
        since = f" (since {c.valid_from.date().isoformat()})" if c.valid_from else ""
        lines.append(f"{c.alias}: {c.content}{extra}{since}")
    if not candidates:
        lines.append("(none)")
    lines += ["", f"Turn (observed {turn.observed_at.isoformat()}):"]
    lines += [f"{m.role}: {m.text}" for m in turn.messages]
    return "\n".join(lines)


class OpenAIExtractor:
    """Proposes lifecycle ops with an OpenAI chat model; see the module docstring.

    Pass ``client`` (an ``AsyncOpenAI``) or ``http_client`` (an ``httpx2.AsyncClient``) to
    route requests elsewhere, e.g. a fake server in tests. 429 and 5xx answers and
    connection errors are retried ``max_retries`` times with exponential backoff
    (``backoff`` seconds, doubled each time, capped at 30 s; ``sleep`` is injectable).
    A timeout fails the call at once with a retryable :class:`ExtractionError`; the
    session's job retry decides what happens next.
    """

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        client: AsyncOpenAI | None = None,
        http_client: httpx2.AsyncClient | None = None,
        model: str | None = None,
        timeout: float = 30.0,
        max_retries: int = 3,
        backoff: float = 0.5,
        sleep: Sleep = asyncio.sleep,
        prompt_version: str = PROMPT_VERSION,
    ) -> None:
        settings = settings or Settings.from_env()
        self.model = model or settings.llm_model
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff = backoff
        self._sleep = sleep
        self.prompt_version = prompt_version
        self._prompt = load_prompt(prompt_version)
        self.json_mode = False  # set once the server has refused structured outputs
        if client is None:
            api_key = settings.openai_api_key
            if not api_key and not settings.openai_base_url:
                raise ConfigError("OPENAI_API_KEY is not set; the OpenAI extractor needs it")
            client = AsyncOpenAI(
                api_key=api_key or "unused",  # local OpenAI-compatible servers ignore it
                base_url=settings.openai_base_url,
                timeout=timeout,
                max_retries=0,
                http_client=http_client,
            )
        else:
            client = client.with_options(max_retries=0)
        self._client = client

    @property
    def name(self) -> str:
        return f"openai:{self.model}:{self.prompt_version}"

    def __repr__(self) -> str:
        return f"OpenAIExtractor(model={self.model!r}, json_mode={self.json_mode})"

    async def extract(
        self, turn: Turn, candidates: Sequence[Candidate], now: datetime
    ) -> Extraction:
        """Ask the model, validate its answer against the candidates, screen it."""
        request = render_request(turn, candidates, now)
        response = await self._call(request)
        choice = response.choices[0] if response.choices else None
        if choice is None or choice.message is None:
            raise ExtractionError("the model returned no message")
        if getattr(choice.message, "refusal", None):
            raise ExtractionError("the model refused to extract from this turn")
        if choice.finish_reason == "length":
            raise ExtractionError("the model's answer was cut off (finish_reason=length)")
        ops = parse_ops(choice.message.content or "", {c.alias for c in candidates}, now)
        screened = screen(ops)
        usage: dict[str, int] = {}
        if response.usage is not None:
            usage = {
                "prompt_tokens": response.usage.prompt_tokens,
                "completion_tokens": response.usage.completion_tokens,
                "total_tokens": response.usage.total_tokens,
            }
        notes = (("json mode (no structured outputs)",) if self.json_mode else ()) + screened.notes
        return Extraction(ops=screened.ops, usage=usage, notes=notes)

    async def _call(self, request: str) -> ChatCompletion:
        attempt = 0
        while True:
            try:
                return await self._create(request)
            except openai.BadRequestError as exc:
                if not self.json_mode and _rejects_schema(exc):
                    self.json_mode = True
                    log.warning(
                        "extraction: %s at %s does not support structured outputs "
                        "(json_schema); falling back to JSON mode with local validation",
                        self.model,
                        self._client.base_url,
                    )
                    continue
                raise ExtractionError(
                    f"the model API rejected the request: {_brief(exc)}"
                ) from None
            except openai.APITimeoutError:
                raise ExtractionError(
                    f"the model API did not answer within {self.timeout:g} s", retryable=True
                ) from None
            except (
                openai.RateLimitError,
                openai.InternalServerError,
                openai.APIConnectionError,
            ) as exc:
                if attempt >= self.max_retries:
                    raise ExtractionError(
                        f"the model API failed after {attempt + 1} attempts: {_brief(exc)}",
                        retryable=True,
                    ) from None
                await self._sleep(_delay(exc, self.backoff, attempt))
                attempt += 1
            except openai.APIStatusError as exc:
                retryable = exc.status_code >= 500
                if retryable and attempt < self.max_retries:
                    await self._sleep(_delay(exc, self.backoff, attempt))
                    attempt += 1
                    continue
                raise ExtractionError(
                    f"the model API failed: {_brief(exc)}", retryable=retryable
                ) from None

    async def _create(self, request: str) -> ChatCompletion:
        system = self._prompt
        response_format: ResponseFormatJSONSchema | ResponseFormatJSONObject
        if self.json_mode:
            system += "\nAnswer with one JSON object matching this JSON schema:\n" + json.dumps(
                OP_SCHEMA
            )
            response_format = {"type": "json_object"}
        else:
            response_format = {
                "type": "json_schema",
                "json_schema": {"name": "belief_ops", "strict": True, "schema": OP_SCHEMA},
            }
        messages: list[ChatCompletionMessageParam] = [
            {"role": "system", "content": system},
            {"role": "user", "content": request},
        ]
        return await self._client.chat.completions.create(
            model=self.model,
            messages=messages,
            response_format=response_format,
            temperature=0,
            timeout=self.timeout,
        )


def _rejects_schema(exc: openai.APIStatusError) -> bool:
    text = f"{exc.message} {exc.body!r}".lower()
    return "response_format" in text or "json_schema" in text


def _brief(exc: openai.APIError) -> str:
    status = getattr(exc, "status_code", None)
    message = " ".join(str(exc.message).split())[:300]
    return f"HTTP {status}: {message}" if status else message


def _delay(exc: openai.APIError, base: float, attempt: int) -> float:
    delay = base * (2**attempt)
    response = getattr(exc, "response", None)
    if isinstance(response, httpx2.Response):
        with contextlib.suppress(ValueError):
            delay = max(delay, float(str(response.headers.get("retry-after", ""))))
    return float(min(delay, 30.0))


def parse_ops(text: str, aliases: set[str], now: datetime) -> list[Op]:
    """Validate the model's JSON answer and build ops; any violation raises ExtractionError."""
    try:
        data = json.loads(_FENCE.sub("", text))
    except json.JSONDecodeError as exc:
        raise ExtractionError(f"the model's answer is not valid JSON ({exc.msg})") from None
    if not isinstance(data, dict) or set(data) != {"ops"} or not isinstance(data["ops"], list):
        raise ExtractionError('the model\'s answer must be an object {"ops": [...]}')
    return [_op(i, raw, aliases, now) for i, raw in enumerate(data["ops"])]


def _op(index: int, raw: object, aliases: set[str], now: datetime) -> Op:
    def fail(why: str) -> ExtractionError:
        kind = raw.get("op") if isinstance(raw, dict) else None
        return ExtractionError(f"the model's op #{index} ({kind}) is invalid: {why}")

    if not isinstance(raw, dict):
        raise fail("not an object")
    extra = set(raw) - _FIELDS
    if extra:
        raise fail(f"unknown fields {sorted(extra)}")
    kind = raw.get("op")
    if kind not in OP_KINDS:
        raise fail(f"unknown op kind {kind!r}; expected one of {', '.join(OP_KINDS)}")
    text = {f: _string(raw, f, fail) for f in ("target", "content", "key", "evidence", "reason")}
    targets = raw.get("targets") or []
    if not isinstance(targets, list) or not all(isinstance(t, str) for t in targets):
        raise fail("targets must be a list of aliases")
    confidence = raw.get("confidence")
    if confidence is not None and (
        isinstance(confidence, bool)
        or not isinstance(confidence, int | float)
        or not 0 <= confidence <= 1
    ):
        raise fail("confidence must be a number between 0 and 1")
    for alias in [text["target"], *targets]:
        if alias is not None and alias not in aliases:
            raise fail(f"unknown candidate alias {alias!r}")
    needs = _REQUIRED[kind]
    if "target" in needs and not text["target"]:
        raise fail("needs a target alias")
    if "content" in needs and not (text["content"] or "").strip():
        raise fail("needs content")
    if kind == "MERGE" and len(set(targets)) < 2:
        raise fail("MERGE needs two or more distinct targets")
    if kind == "UPDATE" and text["content"] is None and confidence is None:
        raise fail("UPDATE needs content or confidence")
    return Op(
        kind,
        content=text["content"],
        target=text["target"],
        targets=tuple(targets),
        key=text["key"],
        confidence=float(confidence) if confidence is not None else None,
        evidence=text["evidence"],
        reason=text["reason"] or ("no longer true" if kind == "INVALIDATE" else None),
        valid_from=_date(raw.get("valid_from"), now, fail),
    )


_REQUIRED: Mapping[str, frozenset[str]] = {
    "ADD": frozenset({"content"}),
    "UPDATE": frozenset({"target"}),
    "SUPERSEDE": frozenset({"target", "content"}),
    "INVALIDATE": frozenset({"target"}),
    "MERGE": frozenset({"content"}),
}


def _string(raw: dict[str, Any], field: str, fail: Callable[[str], ExtractionError]) -> str | None:
    value = raw.get(field)
    if value is not None and not isinstance(value, str):
        raise fail(f"{field} must be a string or null")
    return value


def _date(value: object, now: datetime, fail: Callable[[str], ExtractionError]) -> datetime | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise fail("valid_from must be an ISO 8601 string or null")
    text = value.strip()
    if re.fullmatch(r"\d{4}(-\d{2})?", text):
        text += "-01" * (3 - len(text.split("-")))
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise fail(f"valid_from {value!r} is not an ISO 8601 date") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=now.tzinfo)
    return moment if moment <= now else None
