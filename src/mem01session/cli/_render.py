"""Rendering shared by the inspector commands: tables, timelines, JSON.

Everything that came from a conversation or a database row is shown through
:func:`outside`: wrapped in :class:`rich.text.Text`, so brackets in a belief are printed as
they are, never read as console markup, and with the characters that act on a terminal
(:func:`inert`) shown as escapes.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from rich.table import Table
from rich.text import Text

from ..memory.records import Belief, Episode, LedgerEvent, Source

STATUS_STYLE = {
    "active": "green",
    "superseded": "yellow",
    "invalidated": "red",
    "merged": "blue",
}


# Terminal controls (C0 but tab and newline, DEL, C1) and the bidirectional embeddings,
# overrides and isolates (U+202A-U+202E, U+2066-U+2069). Printed as they are, words a user
# said could restyle the operator's terminal, retitle it, move its cursor, or make a line
# read in another order than it is stored (the "Trojan Source" trick).
_ACTIVE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _escaped(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def inert(text: str) -> str:
    """``text`` with what would act on a terminal shown as an escape (``\\x1b``,
    ``\\u202e``); everything else, non-Latin scripts and emoji included, as it is."""
    return _ACTIVE.sub(_escaped, text)


def outside(text: str, style: str = "") -> Text:
    """Text from a conversation or a row, to print: no markup read, nothing active."""
    return Text(inert(text), style=style)


def when(moment: datetime | None) -> str:
    """A timestamp to the minute, UTC offset kept (``-`` for none)."""
    if moment is None:
        return "-"
    return moment.isoformat(sep=" ", timespec="minutes")


def day(moment: datetime | None) -> str:
    """The day of ``moment`` in UTC (``-`` for none), as the browser shows it."""
    return "-" if moment is None else moment.astimezone(UTC).date().isoformat()


def status(value: str) -> Text:
    return Text(value, style=STATUS_STYLE.get(value, ""))


def validity(belief: Belief) -> str:
    """``since D`` for an open interval, ``D to D'`` for a closed one."""
    if belief.valid_to is None:
        return f"since {day(belief.valid_from)}"
    return f"{day(belief.valid_from)} to {day(belief.valid_to)}"


def source_summary(sources: Sequence[Source]) -> Text:
    """The latest source that quotes evidence (else the latest), with a count of the rest."""
    if not sources:
        return Text("-")
    src = next((s for s in reversed(sources) if s.evidence), sources[-1])
    parts = [src.session_id or "?", day(src.observed_at)]
    text = outside(" ".join(parts))
    if src.evidence:
        text.append(outside(f' "{src.evidence}"', style="italic"))
    if len(sources) > 1:
        text.append(f" (+{len(sources) - 1})")
    return text


def link(belief: Belief) -> str:
    """Where an inactive belief went: ``-> #N`` for superseded or merged."""
    target = belief.superseded_by or belief.merged_into
    return f"-> #{target}" if target else ""


def beliefs_table(beliefs: Iterable[Belief], *, show_all: bool) -> Table:
    """One row per belief: id, statement, (status,) validity, confidence, source."""
    table = Table(title="all beliefs" if show_all else "current beliefs", expand=False)
    table.add_column("id", justify="right", no_wrap=True)
    table.add_column("belief")
    if show_all:
        table.add_column("status", no_wrap=True)
    table.add_column("valid", no_wrap=True)
    table.add_column("conf", justify="right", no_wrap=True)
    table.add_column("source")
    for b in beliefs:
        row: list[Text | str] = [f"#{b.id}", outside(b.content)]
        if show_all:
            row.append(status(b.status) + Text(f" {link(b)}".rstrip()))
        row += [validity(b), f"{b.confidence:.2f}", source_summary(b.sources)]
        table.add_row(*row)
    return table


def sources_table(sources: Sequence[Source]) -> Table:
    """Provenance: every source of one belief, oldest first."""
    table = Table(title="provenance", expand=False)
    for name in ("observed", "session", "item", "extractor", "job", "episode", "evidence"):
        table.add_column(name)
    for s in sources:
        table.add_row(
            when(s.observed_at),
            outside(s.session_id or "-"),
            outside(s.item_ref or "-"),
            outside(s.extractor or "-"),
            "-" if s.job_id is None else str(s.job_id),
            "-" if s.episode_id is None else f"e#{s.episode_id}",
            outside(s.evidence or "-", style="italic"),
        )
    return table


def said(episode: Episode) -> Text:
    """``e#N, when, in which conversation: "the words"`` (hidden ones marked)."""
    text = Text(f"e#{episode.id} {when(episode.said_at)} in ")
    text.append(outside(episode.session_id))
    text.append(": ")
    if episode.role == "assistant":
        text.append("(assistant) ")
    text.append(outside(json.dumps(episode.content, ensure_ascii=False), style="italic"))
    if episode.hidden_at is not None:
        text.append(f" (hidden {day(episode.hidden_at)}: a belief drawn from it was forgotten)")
    if episode.context:
        text.append(" after ")
        text.append(outside(json.dumps(episode.context, ensure_ascii=False), style="dim"))
    return text


def episodes_table(episodes: Iterable[Episode]) -> Table:
    """One row per episode, by conversation then time: id, said, who, words (and what they
    came after), beliefs."""
    table = Table(title="episodes", expand=False)
    table.add_column("id", justify="right", no_wrap=True)
    table.add_column("said", no_wrap=True)
    table.add_column("conversation")
    table.add_column("who", no_wrap=True)
    table.add_column("words")
    table.add_column("beliefs", no_wrap=True)
    ordered = sorted(episodes, key=lambda e: (e.session_id, e.said_at, e.message, e.passage))
    for e in ordered:
        words = outside(e.content, style="dim" if e.hidden_at is not None else "")
        if e.hidden_at is not None:
            words.append(" (hidden)")
        if e.context:
            words.append("\n")
            words.append(outside(f"after: {e.context}", style="dim"))
        table.add_row(
            f"e#{e.id}",
            when(e.said_at),
            outside(e.session_id),
            e.role,
            words,
            ", ".join(f"#{b}" for b in e.belief_ids) or "-",
        )
    return table


def _state(state: Mapping[str, Any] | None) -> Text:
    """A ledger snapshot as ``#id "content" (status)``; MERGE lists its sources."""
    if not state:
        return Text("-")
    if "sources" in state and "content" not in state:
        out = Text()
        for i, src in enumerate(state["sources"]):
            if i:
                out.append(" + ")
            out += _state(src)
        return out
    text = Text(f"#{state.get('id')} ")
    text.append(outside(json.dumps(str(state.get("content", "")), ensure_ascii=False)))
    text.append(" ")
    text += status(str(state.get("status", "?")))
    return text


def change(event: LedgerEvent) -> Text:
    """``before -> after`` for one ledger event."""
    return _state(event.before) + Text(" -> ") + _state(event.after)


def ledger_table(events: Iterable[LedgerEvent], *, title: str = "ledger") -> Table:
    """The ledger as a timeline: time, op, belief, before -> after, reason."""
    table = Table(title=title, expand=False)
    table.add_column("time", no_wrap=True)
    table.add_column("op", no_wrap=True)
    table.add_column("belief", no_wrap=True)
    table.add_column("before -> after")
    table.add_column("reason")
    for e in events:
        subject = "-" if e.belief_id is None else f"#{e.belief_id}"
        if e.related_ids:
            subject += " (" + ", ".join(f"#{i}" for i in e.related_ids) + ")"
        table.add_row(
            when(e.created_at),
            Text(e.op, style="bold"),
            subject,
            change(e),
            outside(e.reason or ""),
        )
    return table


def jsonable(value: Any) -> Any:
    """Records (dataclasses), datetimes and tuples as plain JSON values."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    return value


def dumps(value: Any) -> str:
    """``value`` as indented JSON, non-ASCII text kept readable; what :func:`inert` escapes
    is written as ``\\uXXXX`` (JSON escapes the rest of the controls itself)."""
    text = json.dumps(jsonable(value), indent=2, ensure_ascii=False)
    return _ACTIVE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
