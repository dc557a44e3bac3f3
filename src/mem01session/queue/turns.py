"""What a job carries: the text-only content of one conversational turn
(:class:`~mem01session.extraction.base.Turn`, what an extractor is given).

Text enters here from the conversation as the SDK gave it; :func:`storable_text` makes it
something PostgreSQL stores and an extractor reads in bounded time (the transcript keeps
the original). A message longer than :data:`MAX_MESSAGE_CHARS` is cut in the middle, with a
marker saying how much was left out: beliefs come from what people say about themselves,
before or after what they paste, not from pasted documents, and the cap keeps one turn's
scrubbing and extraction bounded. A word the cut would split is left out whole (a longer
run without whitespace, such as Chinese, Japanese or Thai text, is cut where the cap falls),
and the secret screen reads each kept part with what lies past its cut before cutting, so
that no part of a secret gets past it as a fragment it cannot recognize (a value whose
label, or a key body whose header, the cut left out).
"""

from __future__ import annotations

import re

from ..extraction.base import Turn, TurnMessage

MAX_MESSAGE_CHARS = 8000
"""The longest message text a job keeps (characters): of a longer one, its first and last
half of that, with a marker between."""

SCREEN_MARGIN = 4000
"""Characters past each cut that the secret screen reads with the part kept (a PEM block
of a 4096-bit RSA key is about 3,300)."""

MAX_WORD_CHARS = 100
"""The longest run without whitespace that a cut leaves out whole rather than split."""

_SURROGATE = re.compile("[\ud800-\udfff]")


def storable_text(text: str) -> str:
    """``text`` cut to :data:`MAX_MESSAGE_CHARS` (its start and its end, marked), without
    NUL characters, and with lone surrogates (not UTF-8) replaced by U+FFFD: nothing
    PostgreSQL would refuse."""
    if len(text) > MAX_MESSAGE_CHARS:
        text = _screened_ends(text)
    if len(text) > MAX_MESSAGE_CHARS:
        half = MAX_MESSAGE_CHARS // 2
        head = _cut_after(text, half)
        tail = _cut_after(text[-half - MAX_WORD_CHARS - 1 :][::-1], half)[::-1]
        marker = f"[... {len(text) - len(head) - len(tail)} characters cut ...]"
        text = " ".join(part for part in (head.rstrip(), marker, tail.lstrip()) if part)
    return _SURROGATE.sub("\ufffd", text.replace("\x00", ""))


def _screened_ends(text: str) -> str:
    """``text`` with the secrets of its kept parts and their margins past the cuts redacted
    (the job's scrub redacts the rest of what is kept; this one sees across the cuts)."""
    # Imported here: compiling the scan's patterns takes a tenth of a second, which only a
    # message past the cap needs before the job is written.
    from .job_records import scrub

    window = MAX_MESSAGE_CHARS // 2 + SCREEN_MARGIN
    if len(text) <= 2 * window:
        return scrub(text)
    return scrub(text[:window]) + text[window:-window] + scrub(text[-window:])


def _cut_after(text: str, size: int) -> str:
    """The first ``size`` characters of ``text``, less the word the cut falls in; a run
    without whitespace longer than :data:`MAX_WORD_CHARS` is not a word (text in a script
    written without spaces, a pasted blob) and is cut where the cut falls."""
    kept = text[:size]
    if kept[-1].isspace() or text[size].isspace():
        return kept
    # The cut word's length on each side, counted up to the limit only.
    before = len(kept[-MAX_WORD_CHARS - 1 :].rsplit(None, 1)[-1])
    after = len(text[size : size + MAX_WORD_CHARS + 1].split(None, 1)[0])
    return kept if before + after > MAX_WORD_CHARS else kept[: size - before]


__all__ = ["MAX_MESSAGE_CHARS", "Turn", "TurnMessage", "storable_text"]
