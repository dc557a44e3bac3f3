"""What a job carries: the text-only content of one conversational turn
(:class:`~mem01session.extraction.base.Turn`, what an extractor is given).

Text enters here from the conversation as the SDK gave it; :func:`storable_text` makes it
something PostgreSQL stores and an extractor reads in bounded time (the transcript keeps
the original). A message longer than :data:`MAX_MESSAGE_CHARS` is cut in the middle, with a
marker saying how much was left out: beliefs come from what people say about themselves,
before or after what they paste, not from pasted documents, and the cap keeps one turn's
scrubbing and extraction bounded. A word the cut would split is left out whole (a longer
run without whitespace, such as Chinese, Japanese or Thai text, is cut where the cap falls),
and the secret screen reads the text on both sides of each cut before cutting, so that no
part of a secret gets past it as a fragment it cannot recognize (a value whose label the
cut left out).
"""

from __future__ import annotations

import re

from ..extraction.base import Turn, TurnMessage

MAX_MESSAGE_CHARS = 8000
"""The longest message text a job keeps (characters): of a longer one, its first and last
half of that, with a marker between."""

SCREEN_MARGIN = 500
"""Characters on each side of a cut that the secret screen reads together before the cut,
so that a label on one side and its value on the other are seen as one (the job's scrub
screens the rest of what is kept)."""

MAX_WORD_CHARS = 100
"""The longest run without whitespace that a cut leaves out whole rather than split."""

_SURROGATE = re.compile("[\ud800-\udfff]")


def storable_text(text: str) -> str:
    """``text`` cut to :data:`MAX_MESSAGE_CHARS` (its start and its end, marked), without
    NUL characters, and with lone surrogates (not UTF-8) replaced by U+FFFD: nothing
    PostgreSQL would refuse."""
    if len(text) > MAX_MESSAGE_CHARS:
        text = _screened_at_cuts(text)
    if len(text) > MAX_MESSAGE_CHARS:
        half = MAX_MESSAGE_CHARS // 2
        head = _cut_after(text, half)
        tail = _cut_after(text[-half - MAX_WORD_CHARS - 1 :][::-1], half)[::-1]
        marker = f"[... {len(text) - len(head) - len(tail)} characters cut ...]"
        text = " ".join(part for part in (head.rstrip(), marker, tail.lstrip()) if part)
    return _SURROGATE.sub("\ufffd", text.replace("\x00", ""))


def _screened_at_cuts(text: str) -> str:
    """``text`` with the secrets within :data:`SCREEN_MARGIN` of either cut redacted."""
    # Imported here: compiling the scan's patterns takes a tenth of a second, which only a
    # message past the cap needs before the job is written.
    from .job_records import scrub

    half, n, margin = MAX_MESSAGE_CHARS // 2, len(text), SCREEN_MARGIN
    head, tail = (half - margin, half + margin), (n - half - margin, n - half + margin)
    windows = [(head[0], tail[1])] if tail[0] <= head[1] else [head, tail]  # met: one
    pieces, at = [], 0
    for start, end in windows:
        pieces += [text[at:start], scrub(text[start:end])]
        at = end
    return "".join([*pieces, text[at:]])


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
