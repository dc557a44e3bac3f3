"""A model call that a server refused because of the memory block is made again without it.

The SDK offers one hook that re-issues a failed model call: the runner's retry policy
(``ModelSettings.retry``). The memory filter installs one on the ``RunConfig`` it makes.
When a call that carried the block fails with a 4xx/5xx whose text names message roles,
the chat template, the content format or the context size ("Conversation roles must
alternate user/assistant/...", "content must be a string", "maximum context length is
2048 tokens"), the policy takes the block out of the
``ModelInputData`` the filter returned (the runner reads that object again for the retry)
and asks for one immediate retry. The session records why (``last_memory_error``) and the
rest of the run goes without memory. The placement is remembered as refused for that model
(:mod:`.placement`): later runs place the block another way, so the refusal costs one
rejected call per process and model (unless it was about the context size, which depends
on the conversation's length). With ``strict=True`` nothing is retried: the error is the
caller's (the refusal is remembered all the same).

Every other failure is decided by the caller's own retry settings, kept as they were:
the agent's ``model_settings.retry`` merged with the ``RunConfig``'s, their policy and
their ``max_retries`` (the retry without the block does not count against them). Without
such settings no other failure is retried, as before.

Which call carried a block is kept in a context variable: the filter and the retry policy
run in the run's own task, so concurrent runs never see each other's calls.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from agents import Agent, ModelSettings
from agents.retry import ModelRetrySettings, RetryDecision, RetryPolicyContext
from agents.run_config import ModelInputData

from ..logs import get_logger
from ..secrets.redaction import redact
from .placement import LADDER, Placement, refused, remember_refusal, strip

log = get_logger(__name__)

# Runner-managed attempts allowed overall: the caller's own policy is held to its own
# max_retries below this ceiling, and the retry without the block is one more.
ATTEMPT_CEILING = 100
_SKIPPED_STATUSES = frozenset({401, 403, 404, 408, 409, 429})
_PLACEMENT_WORDS = (
    "role",
    "alternat",
    "template",
    "jinja",
    "system message",
    "content",
    "format",
    "concatenate",
    # A block that pushes the prompt past a small model's context is refused as well.
    "context length",
    "context size",
    "context window",
)
# About the agent's own output format, not about the input the block is in.
_NOT_PLACEMENT_WORDS = ("response_format", "json_schema")
# About how long the input is: another run, with a shorter conversation, may fit.
_SIZE_WORDS = ("context length", "context size", "context window")


def rejects_placement(context: RetryPolicyContext) -> bool:
    """Whether a failed call's error names message roles, the template, the content
    format or the context size."""
    status = context.normalized.status_code
    if not isinstance(status, int) or status < 400 or status in _SKIPPED_STATUSES:
        return False
    text = _error_text(context)
    if any(word in text for word in _NOT_PLACEMENT_WORDS):
        return False
    return any(word in text for word in _PLACEMENT_WORDS)


def _error_text(context: RetryPolicyContext) -> str:
    body = getattr(context.error, "body", None)
    return f"{context.normalized.message or context.error} {body!r}".lower()


@dataclass
class _Call:
    """One model call of a run that goes through the memory filter."""

    owner: object  # the BlockFallback's token (the fallback itself would make a cycle)
    caller_retry: ModelRetrySettings | None
    data: ModelInputData | None = None  # what the filter returned, when it held a block
    instructions: str | None = None  # the instructions before the block
    placement: Placement | None = None
    model: str = ""  # the model's key (placement.model_key)
    retried: bool = False


_CALL: ContextVar[_Call | None] = ContextVar("mem01_memory_call", default=None)


def _remember(call: _Call, context: RetryPolicyContext) -> str:
    """Remember the refused placement for the call's model (not a refusal for the size);
    what later runs do instead, as the end of the reason given."""
    if call.placement is None or any(word in _error_text(context) for word in _SIZE_WORDS):
        return ""
    remember_refusal(call.model, call.placement)
    left = refused(call.model)
    after = next((p for p in LADDER if p not in left), None)
    if after is None:
        return "; later runs with this model go without memory (it refused every placement)"
    return f"; later runs with this model place it as {after!r}"


class BlockFallback:
    """The retry policy of one memory ``RunConfig`` (see the module docstring).

    ``strict`` says whether the session is strict now; ``rejected`` is told, with the
    reason, each time a call is retried without its block.
    """

    def __init__(
        self,
        base: ModelSettings | None,
        *,
        strict: Callable[[], bool],
        rejected: Callable[[str], None],
    ) -> None:
        self._base = base
        self._base_retry = base.retry if base is not None else None
        self._strict = strict
        self._rejected = rejected
        self._token = object()

    def model_settings(self) -> ModelSettings:
        """The base settings with this retry policy installed, for the run's ``RunConfig``
        (made here, not kept: kept, they would hold this policy that holds them)."""
        ours = ModelRetrySettings(max_retries=ATTEMPT_CEILING, policy=self._policy)
        return (self._base or ModelSettings()).resolve(ModelSettings(retry=ours))

    def begin(self, agent: Agent[Any]) -> None:
        """A model call for ``agent`` is being prepared (no block yet)."""
        merged = ModelSettings(retry=agent.model_settings.retry).resolve(
            ModelSettings(retry=self._base_retry)
        )
        _CALL.set(_Call(self._token, merged.retry))

    def carried(
        self, data: ModelInputData, instructions: str | None, where: Placement, model: str
    ) -> None:
        """The call about to be made, to ``model`` (its key), carries the block (``data``
        as handed to the SDK)."""
        call = _CALL.get()
        if call is not None and call.owner is self._token:
            call.data, call.instructions, call.placement = data, instructions, where
            call.model = model

    async def _policy(self, context: RetryPolicyContext) -> bool | RetryDecision:
        call = _CALL.get()
        if call is None or call.owner is not self._token:
            call = _Call(self._token, self._base_retry)
        if call.data is not None and not call.retried and rejects_placement(context):
            later = _remember(call, context)
            if self._strict():
                return await self._callers(call, context)
            call.retried = True
            strip(call.data, call.instructions)
            said = " ".join(str(context.normalized.message or "").split())[:200]
            reason = redact(
                f"injection refused: the model API rejected the input with the memory block "
                f"(placement {call.placement!r}; MEM01_MEMORY_PLACEMENT chooses another): "
                f"HTTP {context.normalized.status_code}: {said}; the call was made again "
                f"without it{later}"
            )
            log.info("memory: %s", reason)
            self._rejected(reason)
            return RetryDecision(retry=True, delay=0.0, reason="memory block refused")
        return await self._callers(call, context)

    @staticmethod
    async def _callers(call: _Call, context: RetryPolicyContext) -> bool | RetryDecision:
        """The caller's own decision, as if our retry had not happened."""
        settings = call.caller_retry
        if settings is None or settings.policy is None:
            return False
        attempt = context.attempt - (1 if call.retried else 0)
        limit = max(settings.max_retries or 0, 0)
        if attempt > limit:
            return False
        decision = settings.policy(dataclasses.replace(context, attempt=attempt, max_retries=limit))
        if inspect.isawaitable(decision):
            decision = await decision
        return decision  # type: ignore[no-any-return]
