"""The application's memory: :class:`Memory` owns what every session shares
(:mod:`.memory`); :mod:`.attached` keeps the sessions it flushes when it closes."""

from .attached import Attached
from .memory import Memory

__all__ = ["Attached", "Memory"]
