"""Memory the agent and other clients use directly, beside the block injected into each
model call.

* :func:`memory_tools` (:mod:`.agent`): Agents SDK function tools bound to a session's user.
* :mod:`.mcp_server`: the same tools over MCP (``mem01session mcp``), for Claude Desktop,
  Cursor or an SDK agent's ``MCPServerStdio``.
* :class:`MemoryToolbox` (:mod:`.toolbox`): the operations both call, on the engine of a
  :class:`~mem01session.memory.Memory`.

Names are imported on first use, so that the MCP server loads neither the Agents SDK nor
the web stack it does not need.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .agent import memory_tools
    from .toolbox import MemoryToolbox

_HOMES = {"memory_tools": ".agent", "MemoryToolbox": ".toolbox"}

__all__ = ["MemoryToolbox", "memory_tools"]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(home, __name__), name)
    globals()[name] = value
    return value
