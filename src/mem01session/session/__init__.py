"""The session side: the SDK ``Session`` and what it needs around a run.

:mod:`.session` (``Mem01Session``), :mod:`.runs` and :mod:`.injection` (the model-input
filter that puts recalled memory into each model call), :mod:`.durable_tier` (the durable
tier as one session sees it: turns out, recalls in, failures contained), :mod:`.host`
(what a session needs of its memory), :mod:`.items` (reading SDK items).
"""

from .session import (
    Mem01Session,
    SessionHealth,
    memory_session,
    note_recalled,
    records_turns,
    session_health,
)

__all__ = [
    "Mem01Session",
    "SessionHealth",
    "memory_session",
    "note_recalled",
    "records_turns",
    "session_health",
]
