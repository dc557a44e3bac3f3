"""One line of the memory block: a record (a belief) or a quote (an episode), as
:mod:`.render` packs them.

A record is its statement, plus a parenthesis only where it carries information: the end
of validity of a belief that no longer holds (``until``, ``no longer true``), and the date
a belief was observed when the question asks about time (:func:`asks_when`). Ids and
provenance are left out by default (the model needs neither to answer; ``explain``,
``Memory.beliefs`` and the inspector have them); ``provenance="brief"`` adds where and
when a belief was said, ``"quote"`` also the id and the quoted evidence, for applications
whose model cites its sources. A quote is the words of one episode; a reply of the
assistant (kept with ``episodes="all"``) is marked ``(assistant)``; a short one shows the
question it answered; with ``provenance`` set a quote also says in which conversation it
was said (and, for ``"quote"``, the episode's id, ``e#12``).

Everything that came from a conversation goes through :func:`~.frame.escape` (one line,
no tags). Lines and their token counts are remembered (:func:`record_line`,
:func:`quote_line`): the same beliefs come back turn after turn; :func:`forget_rendered`
drops them after an erase.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, tzinfo
from functools import lru_cache

from ..tokens import TokenCounter
from .frame import escape, quoted
from .passages import sentences
from .records import Belief, BlockProvenance, ScoredEpisode
from .small_talk import forget as forget_small_talk

EVIDENCE_CHARS = 120
SESSION_CHARS = 48

# "How long" and "since when", in English and the other languages whose passwords the
# screen knows; then the same in Chinese, Japanese, Korean and Thai (no word boundaries).
_HOW_LONG = (
    r"how long|since when|desde cu[aá]ndo|depuis quand|seit wann|h[aá] quanto"
    r"|сколько времени|hoe lang|jak d[łl]ugo|hur l[äa]nge|kuinka kauan|jak dlouho|mióta"
    r"|bao lâu|berapa lama|πόσο καιρό"
)
_HOW_LONG_GLUED = r"多久|얼마나 오래|นานเท่าไหร่"

# Questions about time: the observation date is then worth its tokens.
_WHEN = re.compile(
    rf"\b(?:{_HOW_LONG}|when|ago|since|until|what (?:year|month|date|day|time)|which "
    r"(?:year|month|date|day)|before|after|first|last|recently|yet"
    # "when" in the other languages whose passwords the screen knows
    r"|cu[aá]ndo|quand|wann|quando|когда|wanneer|kiedy|n[äa]r|hvorn[åa]r|n[åa]r|milloin"
    r"|ne zaman|kdy|kedy|mikor|khi nào|lúc nào|kapan|πότε|מתי|متى|कब)\b"
    rf"|{_HOW_LONG_GLUED}|什么时候|什麼時候|何时|何時|哪年|哪一年|几号|幾號|いつ|언제"
    r"|เมื่อไหร่|เมื่อไร",
    re.IGNORECASE,
)

# Questions whose answer is reckoned from today ("how long ago", "since when"): the block
# then says which day it is for the user. Other questions about time ("when did I move?")
# are answered by the dates alone.
_FROM_NOW = re.compile(
    rf"\b(?:{_HOW_LONG}|ago|how old|how many (?:years|months|weeks|days))\b|{_HOW_LONG_GLUED}",
    re.IGNORECASE,
)


def asks_from_now(query: str) -> bool:
    """Whether ``query``'s answer is reckoned from today (``how long ago``, ``since when``,
    ``how old``): its block then says which day it is for the user."""
    return bool(_FROM_NOW.search(query))


def asks_when(query: str) -> bool:
    """Whether ``query`` asks about time (then records show when they were observed), in
    English and the other languages of :mod:`mem01session.secrets.rules`' passwords."""
    return bool(_WHEN.search(query))


_NOTE_LIKE = re.compile(r" \(([^()]*)\)$")


def day(moment: datetime, zone: tzinfo = UTC) -> str:
    """A short date, the day of ``moment`` in ``zone``: ``1 Mar 2026``."""
    moment = moment.astimezone(zone)
    return f"{moment.day} {moment:%b %Y}"


@dataclass(frozen=True)
class Style:
    """How records are written: dates for questions about time, the provenance level, the
    time zone whose days the dates are (the user's, else UTC), and the user's day today
    (said in the header, with the dates, for a question reckoned from it; None: not said)."""

    dates: bool = False
    provenance: BlockProvenance = "none"
    zone: tzinfo = UTC
    today: date | None = None


def record_note(belief: Belief, style: Style) -> str:
    """What a record's parenthesis says (empty: none), see the module docstring."""
    details: list[str] = []
    if belief.status == "invalidated":
        ended = belief.valid_to or belief.updated_at
        details.append(f"no longer true, {day(ended, style.zone)}")
    elif belief.status != "active":  # superseded or merged: replaced from that day on
        details.append(f"until {day(belief.valid_to or belief.updated_at, style.zone)}")
    elif style.dates or style.provenance != "none":
        details.append(day(belief.valid_from, style.zone))  # since when it holds (said then)
    if style.provenance != "none" and belief.sources:
        src = next((s for s in belief.sources if s.evidence), belief.sources[0])
        if src.session_id:
            details.append(f"said in {escape(src.session_id, SESSION_CHARS)}")
        if style.provenance == "quote":
            if src.evidence:
                details.append(quoted(src.evidence, EVIDENCE_CHARS))
            details.append(f"#{belief.id}")
    return "; ".join(details)


def format_record(belief: Belief, style: Style = Style()) -> str:
    """One record line, without the newline: the statement and, where it carries
    information, a parenthesis (see the module docstring)."""
    return _line(escape(belief.content), record_note(belief, style))


def _line(text: str, note: str) -> str:
    if note:
        return f"- {text} ({note})"
    # A statement that ends like a note ("Likes Queen (the band)") would read back as one:
    # its parenthesis is written as an entity, as <, > and & are.
    return "- " + _NOTE_LIKE.sub(r" &#40;\1)", text)


@lru_cache(maxsize=4096)
def day_line(moment: date) -> str:
    """The line that heads a day's quotes: ``2 Mar 2026:``."""
    return f"{moment.day} {moment:%b %Y}:\n"


def _quote(text: str, role: str, note: str) -> str:
    """``text``, already a JSON string (:func:`~.frame.quoted`), as a quote line."""
    who = "(assistant) " if role == "assistant" else ""
    return f"- {who}{text} ({note})" if note else f"- {who}{text}"


def quote_note(item: ScoredEpisode, style: Style) -> str:
    asked = _asked(item.episode.content, item.episode.context)
    if style.provenance == "none":
        return asked
    where = f"in {escape(item.episode.session_id, SESSION_CHARS)}"
    where = f"{where}; e#{item.episode.id}" if style.provenance == "quote" else where
    return f"{asked}; {where}" if asked else where


SHORT_QUOTE_CHARS = 40
"""A quote this short ("Lisbon.", "Two.", "Yes, since May.") shows the question it
answered (the last its context asks), if any: alone it says nothing."""
QUESTION_CHARS = 120
"""The most characters of that question shown."""


def _asked(content: str, context: str | None) -> str:
    """``answering "the question"`` for a short quote whose context asks one (its last;
    parentheses written as entities, so that the note reads back whole); else empty."""
    if not context or len(content) > SHORT_QUOTE_CHARS:
        return ""
    questions = [s for s in sentences(context) if s.endswith("?")]
    if not questions:
        return ""
    question = quoted(questions[-1], QUESTION_CHARS).replace("(", "&#40;").replace(")", "&#41;")
    return f"answering {question}"


@lru_cache(maxsize=1 << 16)
def record_line(counter: TokenCounter, content: str, note: str) -> tuple[str, int]:
    """A record line (as :func:`format_record` writes it, with its newline) and its token
    count, remembered: the same beliefs come back turn after turn, and escaping and
    counting are most of what packing costs. ``("", 0)`` when nothing is printable."""
    text = escape(content)
    if not text:
        return "", 0
    line = _line(text, note) + "\n"
    return line, counter.count(line)


@lru_cache(maxsize=1 << 16)
def quote_line(counter: TokenCounter, content: str, role: str, note: str) -> tuple[str, int]:
    """A quote line (with its newline) and its token count, remembered like record
    lines. ``("", 0)`` when nothing is printable."""
    if not escape(content):
        return "", 0
    line = _quote(quoted(content), role, note) + "\n"
    return line, counter.count(line)


@lru_cache(maxsize=4096)
def token_cost(counter: TokenCounter, text: str) -> int:
    return counter.count(text)


def forget_rendered() -> None:
    """Drop every remembered record and quote line (and what :mod:`.small_talk` remembers
    of passages), so that after an erase no statement or words of the erased user stay in
    this process's memory (the caches are per process: other processes keep theirs until
    newer lines push them out)."""
    record_line.cache_clear()
    quote_line.cache_clear()
    forget_small_talk()
