"""The memory tools as Agents SDK function tools, bound to one session's user.

``Agent(..., tools=memory_tools(session))`` gives the model ``search_memory``,
``remember``, ``correct_memory`` and ``forget_memory`` over the durable memory of
``session.user_id``, recorded as the source ``agent-tool`` in the conversation
``session.session_id``, with the tool call's id as the provenance's ``item_ref``.

A refused call (a bad id, another user's belief, an empty statement, a secret, an erased
user, memory out of reach) comes back to the model as the tool's result, starting with
``error:``; the run goes on. What ``search_memory`` returns is shown to the model in its
run and stored in the transcript as a note only (see
:mod:`mem01session.session.recalled`), as the injected block is never stored.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated, Any

from agents import FunctionTool, ModelBehaviorError, RunContextWrapper, function_tool
from agents.tool import default_tool_error_function
from agents.tool_context import ToolContext

from ..checks import check_positive_int, check_seconds
from ..errors import ConfigError, MemoryToolError
from ..session import Mem01Session, memory_session, note_recalled
from .toolbox import AGENT_TOOL, ARGUMENTS, CALL_TIMEOUT_SECONDS, DESCRIPTIONS, MemoryToolbox

TOOL_NAMES = ("search_memory", "remember", "correct_memory", "forget_memory")


async def _answer(call: Awaitable[str]) -> str:
    try:
        return await call
    except MemoryToolError as exc:
        return f"error: {exc}"


def memory_tools(
    session: Mem01Session,
    *,
    max_tokens: int | None = None,
    timeout: float = CALL_TIMEOUT_SECONDS,
) -> list[FunctionTool]:
    """``search_memory``, ``remember``, ``correct_memory`` and ``forget_memory`` for the
    user of ``session`` (a search returns at most ``max_tokens``, default the session's
    ``max_memory_tokens``; a call that takes longer than ``timeout`` seconds is cut short
    and its result says memory is out of reach)."""
    # A bad argument is the caller's mistake (ConfigError), not a tool call's refusal.
    if memory_session(session) is None:
        raise ConfigError(
            f"session must be a Mem01Session (or a session wrapping one, such as a "
            f"SessionManager's), got {type(session).__name__}"
        )
    check_seconds("timeout", timeout)
    if max_tokens is not None:
        check_positive_int("max_tokens", max_tokens)
    box = MemoryToolbox(
        session.memory,
        session.user_id,
        source=AGENT_TOOL,
        conversation=session.session_id,
        max_tokens=max_tokens if max_tokens is not None else session.max_memory_tokens,
        timeout=timeout,
    )

    async def search_memory(
        ctx: ToolContext[Any],
        query: Annotated[str, ARGUMENTS["query"]],
        include_history: Annotated[bool, ARGUMENTS["include_history"]] = False,
    ) -> str:
        note_recalled(session, ctx.tool_call_id)  # its output stays out of the transcript
        # The session's zone as it is now, else UTC: what its own memory block dates in.
        zone = getattr(session, "timezone", None) or "UTC"
        return await _answer(box.search(query, include_history=include_history, timezone=zone))

    async def remember(
        ctx: ToolContext[Any],
        statement: Annotated[str, ARGUMENTS["statement"]],
        key: Annotated[str | None, ARGUMENTS["key"]] = None,
    ) -> str:
        return await _answer(box.remember(statement, key=key, item_ref=ctx.tool_call_id))

    async def correct_memory(
        ctx: ToolContext[Any],
        id: Annotated[int, ARGUMENTS["id"]],
        statement: Annotated[str, ARGUMENTS["correction"]],
    ) -> str:
        return await _answer(box.correct(id, statement, item_ref=ctx.tool_call_id))

    async def forget_memory(
        ctx: ToolContext[Any],
        id: Annotated[int, ARGUMENTS["id"]],
        reason: Annotated[str, ARGUMENTS["reason"]],
    ) -> str:
        return await _answer(box.forget(id, reason, item_ref=ctx.tool_call_id))

    made: dict[str, FunctionTool] = {}
    for fn in (search_memory, remember, correct_memory, forget_memory):
        made[fn.__name__] = function_tool(
            fn,
            description_override=DESCRIPTIONS[fn.__name__],
            failure_error_function=_failure(fn.__name__, made),
        )
    return list(made.values())


def _failure(
    name: str, made: dict[str, FunctionTool]
) -> Callable[[RunContextWrapper[Any], Exception], str]:
    """What the model is told when a call of tool ``name`` fails outside the tool (its
    arguments did not parse, or did not fit its parameters): which parameters it takes,
    so that it can call again. Anything else stays the SDK's message, which says nothing
    of the error."""

    def failure(ctx: RunContextWrapper[Any], error: Exception) -> str:
        if isinstance(error, ModelBehaviorError) and str(error).startswith("Invalid JSON input"):
            wanted = _parameters(made[name].params_json_schema)
            return f"error: the arguments must be one JSON object: {wanted}; call {name} again"
        return default_tool_error_function(ctx, error)

    return failure


def _parameters(schema: dict[str, Any]) -> str:
    """A tool's parameters as the model is told them: ``id`` (integer, required), ..."""
    required = set(schema.get("required", ()))
    out = []
    for param, spec in schema.get("properties", {}).items():
        kinds = [spec["type"]] if "type" in spec else [s.get("type") for s in spec.get("anyOf", ())]
        kind = " or ".join(k for k in kinds if k) or "any"
        out.append(f"{param} ({kind}{', required' if param in required else ''})")
    return ", ".join(out)


__all__ = ["TOOL_NAMES", "memory_tools"]
