"""Shared helpers: one Runner turn with a ScriptedModel, and checks on what the model saw."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from agents import Agent, FunctionTool, Runner, function_tool
from agents.memory import Session
from agents.testing import ScriptedModel, assistant_message, function_call

from mem01session.shortterm._items import SYNTHETIC_KEY


@function_tool
def lookup(q: str) -> str:
    """Look something up."""
    return f"result for {q}"


@function_tool
def big_lookup(q: str) -> str:
    """Look something up, verbosely."""
    return "x" * 5000


async def turn(
    session: Session,
    text: str,
    answer: str | None = None,
    *,
    tool: FunctionTool | None = None,
    call_id: str | None = None,
    context: Any = None,
    args: dict[str, Any] | None = None,
) -> ScriptedModel:
    """One user turn through the real Runner; with ``tool`` the model calls it first."""
    steps: list[Any] = []
    if tool is not None:
        steps.append([function_call(tool.name, args or {"q": text}, call_id=call_id or "c")])
    steps.append([assistant_message(answer or f"answer to {text}")])
    model = ScriptedModel(steps)
    agent = Agent(name="a", model=model, tools=[tool] if tool else [])
    run_config = getattr(session, "run_config", None)
    kwargs: dict[str, Any] = {"session": session, "context": context}
    if callable(run_config):
        kwargs["run_config"] = run_config()
    await Runner.run(agent, text, **kwargs)
    model.assert_complete()
    return model


def user_texts(items: Sequence[Any]) -> list[str]:
    return [i["content"] for i in items if isinstance(i, dict) and i.get("role") == "user"]


def assert_model_input_clean(model: ScriptedModel) -> None:
    """No orphaned tool output and no synthetic marker in any call of ``model``."""
    for call in model.calls:
        items = list(call.input)
        calls = {i.get("call_id") for i in items if i.get("type") == "function_call"}
        outputs = [i for i in items if i.get("type") == "function_call_output"]
        assert all(o["call_id"] in calls for o in outputs), items
        assert SYNTHETIC_KEY not in json.dumps(items, default=str)


def types(items: Sequence[Any]) -> list[str]:
    return [i.get("type", "message") if i.get("type") else i.get("role", "?") for i in items]
