"""What an import did: records made without the engine (the command line imports them)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Restored:
    """What importing one user did."""

    user_id: str
    episodes: int
    beliefs: int
    events: int
    skipped: bool = False
    transcripts: int = 0
    """Items of the user's conversations written to the transcript store."""
    """The same document was imported for this user before: nothing changed."""


@dataclass(frozen=True)
class ImportReport:
    """What an import did, user by user (in the document's order)."""

    source: str
    """Who wrote the document (``mem01session``, ``mem0``)."""
    users: tuple[Restored, ...]
    left_out: tuple[str, ...] = ()
    """What was not imported, and why (mem0 memories addressed to the assistant)."""

    @property
    def imported(self) -> tuple[Restored, ...]:
        return tuple(u for u in self.users if not u.skipped)

    @property
    def skipped(self) -> tuple[Restored, ...]:
        """Users the same document was imported for before (nothing changed)."""
        return tuple(u for u in self.users if u.skipped)


__all__ = ["ImportReport", "Restored"]
