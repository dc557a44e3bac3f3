"""What a job carries: the text-only content of one conversational turn."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal


@dataclass(frozen=True)
class TurnMessage:
    """One text message of a turn (user or assistant); never tool payloads or memory."""

    role: Literal["user", "assistant"]
    text: str
    item_ref: str | None = None


@dataclass(frozen=True)
class Turn:
    """The text-only content of one conversational turn, as stored in a job."""

    session_id: str
    messages: tuple[TurnMessage, ...]
    observed_at: datetime
