"""The memory document: one user's durable memory (or several users'), as JSON Lines.

What ``mem01session export`` writes and ``mem01session import`` reads. One JSON object per
line, each with a ``kind``, in the order an import needs:

- ``header`` first: ``{"kind": "header", "format": "mem01session", "version": 1,
  "exported_at": ..., "embedding_model": ...}``;
- per user: the ``user`` (its zone, when it was first seen, the erase tombstone if any),
  then its ``episode`` lines (what the user said, verbatim and dated, hidden or not), its
  ``belief`` lines (status, key, validity, version, links to successors, provenance rows
  under ``sources``, near-duplicates under ``twins``), its ``event`` lines (the ledger),
  and, when the export was asked for them, its ``transcript`` lines (the items of the
  user's conversations as the SDK stored them, dated);
- ``end`` last, with how many users and records came before: a cut file is refused.

Ids are the document's own (``ref``: 1, 2, ... per user for beliefs and episodes), so that
a document does not depend on the database it came from; a turn is named by the key its
job had (``turn``). Vectors are not kept: the importing memory embeds with its own model.

:func:`parse` checks one line; :class:`Checker` checks a whole document as it streams by,
keeping only the refs each user's lines point at.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ...checks import MAX_ID_CHARS, is_utf8
from ...errors import DocumentError
from ...secrets.redaction import MASK
from ...secrets.scan import REDACTED, find_secrets
from ..ops import MAX_CONTENT_CHARS

FORMAT = "mem01session"
VERSION = 1
KINDS = ("header", "user", "episode", "belief", "event", "transcript", "end")
STATUSES = ("active", "superseded", "invalidated", "merged")
ROLES = ("user", "assistant")
OPS = ("ADD", "CONFIRM", "UPDATE", "SUPERSEDE", "INVALIDATE", "MERGE", "CORRECT", "FORGET")
IMPORT_OP = "IMPORT"
MAX_TEXT_CHARS = 100_000
"""The longest passage, context or evidence a line may carry."""
MAX_LINE_BYTES = 32 << 20
"""The longest line a document may hold: room for a transcript's item (a tool's output
can run to megabytes), and a bound on what one line makes the importer read at once."""

Record = dict[str, Any]


def dumps(record: Mapping[str, Any]) -> str:
    """One line of the document (no newline)."""
    return json.dumps(record, ensure_ascii=False, separators=(",", ":"), default=_iso)


def _iso(value: object) -> str:
    if isinstance(value, datetime):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def parse(text: str | bytes, line: int) -> Record:
    """The record on ``line`` (its number, from 1), checked: its fields are of the right
    types, its times are ISO 8601 with a zone (parsed to datetimes), its texts fit."""
    if len(text) > MAX_LINE_BYTES:
        raise DocumentError(line, f"longer than {MAX_LINE_BYTES} bytes")
    try:
        raw = json.loads(text)
    except (ValueError, UnicodeDecodeError) as exc:
        raise DocumentError(line, f"not JSON ({str(exc).split(':')[0]})") from None
    if not isinstance(raw, dict):
        raise DocumentError(line, f"a {type(raw).__name__}, not a JSON object")
    kind = raw.get("kind")
    if kind not in KINDS:
        raise DocumentError(line, f"kind must be one of {', '.join(KINDS)}; got {kind!r:.40}")
    return _Fields(raw, line).check(kind)


class _Fields:
    """Reads one line's fields, each check naming the line and the field."""

    def __init__(self, raw: dict[str, Any], line: int) -> None:
        self.raw = raw
        self.line = line

    def fail(self, name: str, why: str) -> DocumentError:
        return DocumentError(self.line, f"{name}: {why}")

    def check(self, kind: str) -> Record:
        out: Record = {"kind": kind}
        if kind == "header":
            if self.raw.get("format") != FORMAT:
                raise self.fail("format", f"must be {FORMAT!r}: this is not a memory document")
            version = self.raw.get("version")
            if version != VERSION:
                raise self.fail(
                    "version", f"this library reads version {VERSION}, got {version!r:.20}"
                )
            out |= {
                "format": FORMAT,
                "version": VERSION,
                "exported_at": self.moment("exported_at", optional=True),
                "embedding_model": self.text("embedding_model", optional=True, limit=500),
                "source": self.text("source", optional=True, limit=100) or FORMAT,
            }
        elif kind == "end":
            out |= {"users": self.count("users"), "records": self.count("records")}
        elif kind == "user":
            out |= {
                "user": self.user(),
                "timezone": self.text("timezone", optional=True, limit=100),
                "created_at": self.moment("created_at", optional=True),
                "erased_at": self.moment("erased_at", optional=True),
            }
        elif kind == "episode":
            out |= {
                "user": self.user(),
                "ref": self.ref("ref"),
                "session": self.ident("session"),
                "turn": self.ident("turn"),
                "message": self.small("message"),
                "passage": self.small("passage"),
                "item_ref": self.text("item_ref", optional=True, limit=MAX_ID_CHARS),
                "role": self.choice("role", ROLES),
                "content": self.text("content", limit=MAX_TEXT_CHARS),
                "context": self.text("context", optional=True, limit=MAX_TEXT_CHARS),
                "said_at": self.moment("said_at"),
                "hidden_at": self.moment("hidden_at", optional=True),
                "created_at": self.moment("created_at", optional=True),
            }
        elif kind == "belief":
            out |= self.belief()
        elif kind == "transcript":
            item = self.raw.get("item")
            if not isinstance(item, dict):
                raise self.fail("item", "must be an object (an SDK input item)")
            out |= {
                "user": self.user(),
                "session": self.ident("session"),
                "item": item,
                "at": self.moment("at"),
            }
        else:
            out |= self.event()
        return out

    def belief(self) -> Record:
        content = self.text("content", limit=MAX_CONTENT_CHARS)
        if found := find_secrets(content.replace(REDACTED, " ").replace(MASK, " ")):
            raise self.fail(
                "content", f"holds a secret ({found[0].label}); memory never stores one"
            )
        status = self.choice("status", STATUSES)
        confidence = self.raw.get("confidence", 0.8)
        if isinstance(confidence, bool) or not isinstance(confidence, int | float):
            raise self.fail("confidence", "must be a number from 0 to 1")
        if not (0.0 <= float(confidence) <= 1.0) or math.isnan(float(confidence)):
            raise self.fail("confidence", "must be a number from 0 to 1")
        valid_from = self.moment("valid_from")
        valid_to = self.moment("valid_to", optional=True)
        if (valid_to is None) != (status == "active"):
            raise self.fail("valid_to", "an active belief has none; any other has one")
        if valid_to is not None and valid_to < valid_from:
            raise self.fail("valid_to", "is before valid_from")
        sources = self.raw.get("sources", [])
        if not isinstance(sources, list):
            raise self.fail("sources", "must be a list")
        return {
            "user": self.user(),
            "ref": self.ref("ref"),
            "content": content,
            "key": self.text("key", optional=True, limit=200),
            "status": status,
            "confidence": float(confidence),
            "version": self.count("version", minimum=1, default=1),
            "valid_from": valid_from,
            "valid_to": valid_to,
            "created_at": self.moment("created_at", optional=True),
            "updated_at": self.moment("updated_at", optional=True),
            "last_confirmed_at": self.moment("last_confirmed_at", optional=True),
            "superseded_by": self.ref("superseded_by", optional=True),
            "merged_into": self.ref("merged_into", optional=True),
            "twins": self.refs("twins"),
            "sources": [self.source(i, s) for i, s in enumerate(sources)],
        }

    def source(self, index: int, raw: object) -> Record:
        if not isinstance(raw, dict):
            raise self.fail(f"sources[{index}]", "must be an object")
        inner = _Fields(raw, self.line)
        try:
            return {
                "session": inner.text("session", optional=True, limit=MAX_ID_CHARS),
                "item_ref": inner.text("item_ref", optional=True, limit=MAX_ID_CHARS),
                "evidence": inner.text("evidence", optional=True, limit=MAX_TEXT_CHARS),
                "observed_at": inner.moment("observed_at"),
                "extractor": inner.text("extractor", optional=True, limit=200),
                "turn": inner.text("turn", optional=True, limit=MAX_ID_CHARS),
                "episode": inner.ref("episode", optional=True),
                "created_at": inner.moment("created_at", optional=True),
            }
        except DocumentError as exc:
            raise self.fail(f"sources[{index}]", exc.reason) from None

    def event(self) -> Record:
        op = self.choice("op", (*OPS, IMPORT_OP))
        snapshots = {}
        for name in ("before", "after"):
            value = self.raw.get(name)
            if value is not None and not isinstance(value, dict):
                raise self.fail(name, "must be an object or null")
            snapshots[name] = value
        return {
            "user": self.user(),
            "op": op,
            "belief": self.ref("belief", optional=True),
            "related": self.refs("related"),
            "reason": self.text("reason", optional=True, limit=MAX_TEXT_CHARS),
            "turn": self.text("turn", optional=True, limit=MAX_ID_CHARS),
            "created_at": self.moment("created_at"),
        } | snapshots

    # -- one field ------------------------------------------------------------------------

    def user(self) -> str:
        return self.ident("user")

    def ident(self, name: str) -> str:
        value: str = self.text(name, limit=MAX_ID_CHARS)
        if not value.strip():
            raise self.fail(name, "must not be blank")
        return value

    def given(self, name: str, optional: bool) -> Any:
        """The field's value; None for a missing optional one (a required one must be there)."""
        value = self.raw.get(name)
        if value is None and not optional:
            raise self.fail(name, "missing")
        return value

    def text(self, name: str, *, optional: bool = False, limit: int) -> Any:
        value = self.given(name, optional)
        if value is None:
            return None
        if not isinstance(value, str):
            raise self.fail(name, f"must be a string, got {type(value).__name__}")
        if "\x00" in value or not is_utf8(value):
            raise self.fail(name, "holds a NUL byte or a lone surrogate")
        if len(value) > limit:
            raise self.fail(name, f"{len(value)} characters, over the limit of {limit}")
        if not optional and not value.strip():
            raise self.fail(name, "must not be empty")
        return value

    def moment(self, name: str, *, optional: bool = False) -> Any:
        value = self.given(name, optional)
        if value is None:
            return None
        if not isinstance(value, str):
            raise self.fail(name, "must be an ISO 8601 time")
        try:
            moment = datetime.fromisoformat(value)
        except ValueError:
            raise self.fail(name, f"not an ISO 8601 time: {value!r:.40}") from None
        if moment.tzinfo is None:
            raise self.fail(name, "has no time zone (write it as 2026-01-31T09:00:00+00:00)")
        return moment

    def count(self, name: str, *, minimum: int = 0, default: int | None = None) -> int:
        value = self.raw.get(name, default)
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise self.fail(name, f"must be an integer >= {minimum}")
        if value >= 2**31:
            raise self.fail(name, "too large")
        return value

    def small(self, name: str) -> int:
        value = self.count(name)
        if value >= 2**15:
            raise self.fail(name, "too large")
        return value

    def ref(self, name: str, *, optional: bool = False) -> Any:
        value = self.raw.get(name)
        if value is None and optional:
            return None
        return self._ref(name, value)

    def _ref(self, name: str, value: object) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value < 2**62:
            raise self.fail(name, "must be a positive integer (a ref of this document)")
        return value

    def refs(self, name: str) -> list[int]:
        value = self.raw.get(name, [])
        if not isinstance(value, list):
            raise self.fail(name, "must be a list of refs")
        return [self._ref(name, v) for v in value]

    def choice(self, name: str, allowed: tuple[str, ...]) -> str:
        value = self.raw.get(name)
        if value not in allowed:
            raise self.fail(name, f"must be one of {', '.join(allowed)}; got {value!r:.40}")
        return str(value)


@dataclass
class UserPart:
    """Where one user's lines are in a checked document, and what they hold."""

    user_id: str
    start: int  # byte offset of its user line
    line: int  # that line's number
    end: int = 0  # byte offset after its last line
    episodes: int = 0
    beliefs: int = 0
    events: int = 0
    transcripts: int = 0
    erased: bool = False
    digest: str = ""  # of its lines, as written (see Checker)


@dataclass
class _Refs:
    episodes: set[int] = field(default_factory=set)
    beliefs: set[int] = field(default_factory=set)
    # (line, what, ref) of references to beliefs, checked when the user's lines end
    pending: list[tuple[int, str, int]] = field(default_factory=list)


class Checker:
    """Checks a document line by line (:meth:`feed`, then :meth:`finish`): the header
    first, each user once, a user's lines together and in order (episodes, beliefs,
    events), every ref a line points at defined by that user's lines, and the end line's
    counts. Keeps the refs of one user at a time."""

    def __init__(self, screen: Callable[[str], str | None] | None = None) -> None:
        self.screen = screen  # what a belief's text addresses to the assistant, if anything
        self.header: Record | None = None
        self.parts: list[UserPart] = []
        self._seen: set[str] = set()
        self._refs = _Refs()
        self._stage = 0  # within a user: 0 episodes, 1 beliefs, 2 events, 3 transcripts
        self._records = 0
        self._ended = False
        self._hash: Any = None

    def feed(self, record: Record, line: int, offset: int, raw: bytes) -> None:
        """Check ``record`` (parsed from ``raw``, which starts at byte ``offset``)."""
        kind = record["kind"]
        if self._ended:
            raise DocumentError(line, "a line after the end line")
        if self.header is None:
            if kind != "header":
                raise DocumentError(line, "the first line must be the header")
            self.header = record
            return
        if kind == "header":
            raise DocumentError(line, "a second header")
        if kind == "end":
            self._close(offset)
            if record["users"] != len(self.parts) or record["records"] != self._records:
                raise DocumentError(
                    line,
                    f"the end line counts {record['users']} users and {record['records']} "
                    f"records, the document holds {len(self.parts)} and {self._records}: "
                    "a part is missing",
                )
            self._ended = True
            return
        self._records += 1
        if kind == "user":
            self._close(offset)
            user = record["user"]
            if user in self._seen:
                raise DocumentError(line, f"user {user!r} appears twice")
            self._seen.add(user)
            part = UserPart(user, offset, line, erased=record["erased_at"] is not None)
            self.parts.append(part)
            self._refs, self._stage = _Refs(), 0
            self._hash = hashlib.sha256()
            self._hash.update(raw.rstrip(b"\r\n"))
            return
        if not self.parts or record["user"] != self.parts[-1].user_id:
            raise DocumentError(line, "a user's lines must follow its user line")
        part, refs = self.parts[-1], self._refs
        if part.erased:
            raise DocumentError(line, "an erased user's line holds nothing but the user")
        stage = {"episode": 0, "belief": 1, "event": 2, "transcript": 3}[kind]
        if stage < self._stage:
            raise DocumentError(line, f"a {kind} after the user's {_STAGES[self._stage]}s")
        self._stage = stage
        self._hash.update(b"\n" + raw.rstrip(b"\r\n"))
        if kind == "episode":
            self._new(refs.episodes, record["ref"], line, "episode")
            part.episodes += 1
        elif kind == "belief":
            self._new(refs.beliefs, record["ref"], line, "belief")
            if self.screen is not None and (said := self.screen(record["content"])):
                raise DocumentError(
                    line,
                    f"content: reads as an instruction to the assistant ({said}), not a fact "
                    "about the user; memory does not store one",
                )
            for i, source in enumerate(record["sources"]):
                if source["episode"] is not None and source["episode"] not in refs.episodes:
                    raise DocumentError(
                        line, f"sources[{i}].episode: no episode {source['episode']} of the user"
                    )
            for name in ("superseded_by", "merged_into"):
                if record[name] is not None:
                    refs.pending.append((line, name, record[name]))
            refs.pending += [(line, "twins", t) for t in record["twins"]]
            part.beliefs += 1
        elif kind == "transcript":
            part.transcripts += 1
        else:
            targets = record["related"] + ([record["belief"]] if record["belief"] else [])
            for target in targets:
                if target not in refs.beliefs:
                    raise DocumentError(line, f"names belief {target}, not one of the user's")
            part.events += 1

    def finish(self) -> list[UserPart]:
        """The users, once the last line was fed; a document without its end is refused."""
        if self.header is None:
            raise DocumentError(0, "the document is empty")
        if not self._ended:
            raise DocumentError(0, "the document has no end line: it was cut short")
        return self.parts

    def _new(self, seen: set[int], ref: int, line: int, what: str) -> None:
        if ref in seen:
            raise DocumentError(line, f"{what} ref {ref} appears twice")
        seen.add(ref)

    def _close(self, offset: int) -> None:
        if not self.parts or self.parts[-1].end:
            return
        part = self.parts[-1]
        for line, name, ref in self._refs.pending:
            if ref not in self._refs.beliefs:
                raise DocumentError(line, f"{name}: no belief {ref} of the user")
        part.end = offset
        part.digest = self._hash.hexdigest()


_STAGES = ("episode", "belief", "event", "transcript")


def check_lines(
    lines: Iterable[tuple[int, int, bytes]], screen: Callable[[str], str | None] | None = None
) -> tuple[Record, list[UserPart]]:
    """Check a whole document, given as ``(line number, byte offset, raw line)``: its
    header and its users (with where each one's lines are). ``screen``: what a belief's
    text addresses to the assistant (None: nothing); such a belief refuses the document."""
    checker = Checker(screen)
    for number, offset, raw in lines:
        if not raw.strip():
            continue
        checker.feed(parse(raw, number), number, offset, raw)
    parts = checker.finish()
    assert checker.header is not None
    return checker.header, parts


__all__ = [
    "FORMAT",
    "IMPORT_OP",
    "VERSION",
    "Checker",
    "Record",
    "UserPart",
    "check_lines",
    "dumps",
    "parse",
]
