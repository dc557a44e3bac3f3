"""The session side: the SDK ``Session`` and what it needs around a run.

:mod:`.session` (``Mem01Session``), :mod:`.injection` (the model-input filter that puts
recalled memory into each model call), :mod:`.durable` (the durable tier as one session
sees it: turns out, recalls in, failures contained), :mod:`.items` (reading SDK items).
"""

from .session import Mem01Session, records_turns

__all__ = ["Mem01Session", "records_turns"]
