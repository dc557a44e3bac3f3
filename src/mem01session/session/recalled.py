"""Memory a tool recalled stays out of the transcript, as the injected block does.

The agent's ``search_memory`` tool (:mod:`mem01session.tools`) returns recalled memory as
a tool result, which the SDK stores in the conversation like any tool's. Stored, it would
come back in later runs as if it were still current, beside a newer block (invariant 1).
So the tool tells its session the id of the call, and the session stores that call's
output as :data:`NOT_KEPT`: the model saw the result in its run; later runs see that a
search was made and can make it again. Recognised by the call's id, never by its text.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableSet, Sequence
from typing import Any

NOT_KEPT = (
    "[memory search result: shown to the model when it was made, not kept in the "
    "transcript (memory may have changed since); search again to see it]"
)


def without_recalled(items: Sequence[Any], calls: MutableSet[str]) -> list[Any]:
    """``items`` with the output of every call in ``calls`` replaced by :data:`NOT_KEPT`
    (a copy of that item; the others are the same objects). Each call found leaves
    ``calls``."""
    if not calls:
        return list(items)
    out: list[Any] = []
    for item in items:
        if (
            isinstance(item, Mapping)
            and item.get("type") == "function_call_output"
            and item.get("call_id") in calls
        ):
            calls.discard(str(item["call_id"]))
            item = {**item, "output": NOT_KEPT}
        out.append(item)
    return out


__all__ = ["NOT_KEPT", "without_recalled"]
