"""What a job carries: the text-only content of one conversational turn
(:class:`~mem01session.extraction.base.Turn`, what an extractor is given).

Text enters here from the conversation as the SDK gave it; :func:`storable_text` makes it
something PostgreSQL stores and an extractor reads in bounded time (the transcript keeps
the original). A message longer than :data:`MAX_MESSAGE_CHARS` is cut, with a marker
saying how much was left out: beliefs come from what people say about themselves, not from
pasted documents, and the cap keeps one turn's scrubbing and extraction bounded.
"""

from __future__ import annotations

import re

from ..extraction.base import Turn, TurnMessage

MAX_MESSAGE_CHARS = 8000
"""The longest message text a job keeps (characters); the rest is cut with a marker."""

_SURROGATE = re.compile("[\ud800-\udfff]")


def storable_text(text: str) -> str:
    """``text`` cut to :data:`MAX_MESSAGE_CHARS` (marked), without NUL characters, and with
    lone surrogates (not UTF-8) replaced by U+FFFD: nothing PostgreSQL would refuse."""
    if len(text) > MAX_MESSAGE_CHARS:
        text = (
            f"{text[:MAX_MESSAGE_CHARS]} [... {len(text) - MAX_MESSAGE_CHARS} more characters cut]"
        )
    return _SURROGATE.sub("\ufffd", text.replace("\x00", ""))


__all__ = ["MAX_MESSAGE_CHARS", "Turn", "TurnMessage", "storable_text"]
