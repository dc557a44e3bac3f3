"""Reading a memory block back: the records and quotes :mod:`.render` wrote, for programs
that read blocks (the demo's offline model, tests)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from .frame import PENDING_HEADER
from .render import CLOSE, QUOTES_HEADER


def _unescape(text: str) -> str:
    return (
        text.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&#40;", "(")
        .replace("&#41;", ")")
        .replace("&amp;", "&")
    )


def _unstring(body: str) -> str:
    """A JSON string's body (what stood between its quotes) as the text it escapes."""
    return _unescape(str(json.loads(f'"{body}"')))


def _body(text: str) -> str:
    """The records and the quotes of a block: the words of queued turns that close it are
    neither."""
    return text.split(CLOSE)[0].split(PENDING_HEADER)[0]


@dataclass(frozen=True)
class RenderedQuote:
    """One quote read back from a rendered block (see :func:`parse_quotes`)."""

    day: str  # as the block wrote it: "2 Mar 2026"
    content: str
    role: str  # "user" or "assistant"
    note: str


_DAY = re.compile(r"^(?P<day>\d{1,2} [A-Z][a-z]{2} \d{4}):$")
# A quote is a JSON string (every " and \\ inside it escaped), then an optional note.
_STRING = r'"(?P<content>(?:[^"\\]|\\.)*)"'
_QUOTE = re.compile(rf"^- (?P<who>\(assistant\) )?{_STRING}(?: \((?P<note>[^()]*)\))?$")


def parse_quotes(text: str) -> list[RenderedQuote]:
    """The quotes of a block :func:`render_block` wrote, in order."""
    out: list[RenderedQuote] = []
    body = _body(text)
    if QUOTES_HEADER not in body:
        return out
    current = ""
    for line in body.split(QUOTES_HEADER, 1)[1].splitlines():
        line = line.strip()
        if m := _DAY.match(line):
            current = m["day"]
        elif m := _QUOTE.match(line):
            role = "assistant" if m["who"] else "user"
            note = _unescape(m["note"] or "")
            out.append(RenderedQuote(current, _unstring(m["content"]), role, note))
    return out


_SAID = re.compile(rf"^- {_STRING}$")


def parse_pending(text: str) -> list[str]:
    """The words of queued turns that close a block, in the order said."""
    body = text.split(CLOSE)[0]
    if PENDING_HEADER not in body:
        return []
    lines = body.split(PENDING_HEADER, 1)[1].splitlines()
    return [_unstring(m["content"]) for line in lines if (m := _SAID.match(line.strip()))]


@dataclass(frozen=True)
class RenderedRecord:
    """One record read back from a rendered block (see :func:`parse_block`)."""

    content: str
    status: str  # "active", or "past" for a record that no longer holds
    note: str  # what the parenthesis said, "" without one


_RECORD = re.compile(r"^- (?P<content>.+?)(?: \((?P<note>[^()]*)\))?$")


def parse_block(text: str) -> list[RenderedRecord]:
    """The records of a block :func:`render_block` wrote, in order: its inverse, for
    programs that read blocks (the demo's offline model, tests). Quotes are not records
    (:func:`parse_quotes` reads them)."""
    out: list[RenderedRecord] = []
    for line in _body(text).split(QUOTES_HEADER)[0].splitlines():
        match = _RECORD.match(line.strip())
        if match:
            note = match["note"] or ""
            past = note.startswith(("until ", "no longer true"))
            out.append(
                RenderedRecord(_unescape(match["content"]), "past" if past else "active", note)
            )
    return out
