"""The options of a :class:`~mem01session.session.Mem01Session`, checked in one place: by the
session, and by ``mem01_session_factory`` when the factory is made (not at a first chat)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..checks import check_flag, check_positive_int, check_seconds, check_timezone
from ..config import MEMORY_PLACEMENTS
from ..engine.records import DEFAULT_MAX_TOKENS, BlockProvenance, RecallRequest
from ..errors import ConfigError
from ..memory import Memory

TranscriptSecrets = Literal["keep", "redact"]


@dataclass(frozen=True)
class SessionOptions:
    """What a session's runs are given of memory and how its failures are met (see
    ``Mem01Session``); a bad value is a ``ConfigError`` naming it."""

    max_memory_tokens: int = DEFAULT_MAX_TOKENS
    strict: bool = False
    recall_wait: float = 2.0
    provenance: BlockProvenance = "none"
    memory_placement: str | None = None
    """None (or empty): the memory's setting (``MEM01_MEMORY_PLACEMENT``)."""
    timezone: str | None = None
    """The user's IANA time zone: when their turns were said, and the days of the block's
    dates. None: UTC."""
    transcript_secrets: TranscriptSecrets = "keep"
    """``"keep"``: the transcript keeps what was said as said (the SDK's own sessions do);
    ``"redact"``: secrets in its messages are replaced before they are stored (later
    turns of the conversation then read ``[redacted]``)."""

    def __post_init__(self) -> None:
        check_positive_int("max_memory_tokens", self.max_memory_tokens)
        check_flag("strict", self.strict)
        wait = check_seconds("recall_wait", self.recall_wait)
        object.__setattr__(self, "recall_wait", wait)
        RecallRequest("", provenance=self.provenance)  # checks it
        if self.memory_placement:
            _check_placement(self.memory_placement)
        if self.timezone is not None:
            check_timezone("timezone", self.timezone)
        if self.transcript_secrets not in ("keep", "redact"):
            raise ConfigError(
                "transcript_secrets must be 'keep' or 'redact', got "
                f"{self.transcript_secrets!r:.40}"
            )

    def placement(self, memory: Memory) -> str:
        """Where the block goes in the model input, for a session of ``memory``."""
        return _check_placement(self.memory_placement or memory.settings.memory_placement)


def _check_placement(placement: object) -> str:
    if not isinstance(placement, str) or placement not in MEMORY_PLACEMENTS:
        raise ConfigError(
            f"memory_placement must be one of {', '.join(MEMORY_PLACEMENTS)}, got {placement!r}"
        )
    return placement


__all__ = ["SessionOptions", "TranscriptSecrets"]
