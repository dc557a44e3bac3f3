"""LoCoMo-format data: observation facts become beliefs, QAs of categories 1-4 queries;
the dialogue itself, split into each speaker's chats, for the end-to-end benchmark.

Accepts a file holding one conversation (a dict) or a list of them, with the sessions
either at the top level or under ``"conversation"``, and the observations either as
``session_N_observation`` keys or under ``"observation"``. Pure and stdlib-only.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from .metrics import Query, parse_ids

CATEGORIES = (1, 2, 3, 4)
_OBS = re.compile(r"^session_(\d+)_observation$")
_SESSION = re.compile(r"^session_(\d+)$")
NO_REPLY = "(no reply)"
"""The assistant's answer to a speaker's turn that the other speaker did not answer (the
session ends, or the same speaker goes on)."""


@dataclass(frozen=True)
class Fact:
    text: str
    dia_ids: frozenset[str]
    session: int
    observed_at: datetime | None


@dataclass(frozen=True)
class Conversation:
    user_id: str
    facts: list[Fact]
    queries: list[tuple[Query, str]]  # (query, question text)


def parse_date(raw: object) -> datetime | None:
    """LoCoMo session dates: ``"1:56 pm on 8 May, 2023"``."""
    if not isinstance(raw, str):
        return None
    for fmt in ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y"):
        try:
            return datetime.strptime(raw.strip(), fmt).replace(tzinfo=UTC)
        except ValueError:
            continue
    return None


def _facts(sample: dict[str, Any]) -> list[Fact]:
    convo = sample.get("conversation", sample)
    out: list[Fact] = []
    for key, by_speaker in sorted(_observations(sample).items(), key=_session_number):
        n = _session_number((key, None))
        when = parse_date(convo.get(f"session_{n}_date_time"))
        for entries in (by_speaker or {}).values():
            for entry in entries or ():
                if not entry or not isinstance(entry[0], str) or not entry[0].strip():
                    continue
                ids = parse_ids(entry[1:] if len(entry) > 1 else ())
                out.append(Fact(entry[0].strip(), ids, n, when))
    return out


def _queries(sample: dict[str, Any], user_id: str) -> list[tuple[Query, str]]:
    out: list[tuple[Query, str]] = []
    for index, qa in enumerate(sample.get("qa") or []):
        category = qa.get("category")
        if category not in CATEGORIES or not qa.get("question"):
            continue
        query = Query(f"{user_id}#{index}", parse_ids(qa.get("evidence")), int(category))
        out.append((query, str(qa["question"])))
    return out


def _samples(folder: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """(name, sample) for every conversation of every ``*.json`` file in ``folder``."""
    for path in sorted(Path(folder).glob("*.json")):
        data = json.loads(path.read_text())
        samples = data if isinstance(data, list) else [data]
        for index, sample in enumerate(samples):
            name = sample.get("sample_id") or (
                path.stem if len(samples) == 1 else f"{path.stem}-{index}"
            )
            yield str(name), sample


def load(folder: Path) -> list[Conversation]:
    """Every conversation of every ``*.json`` file in ``folder`` (sorted by name)."""
    conversations: list[Conversation] = []
    for name, sample in _samples(folder):
        user_id = f"locomo-{name}"
        conversations.append(Conversation(user_id, _facts(sample), _queries(sample, user_id)))
    return conversations


# -- the dialogue ----------------------------------------------------------------------------


@dataclass(frozen=True)
class DialogueTurn:
    speaker: str
    dia_id: str
    text: str  # as said, an image's caption appended (see turn_text)
    index: int  # position in its session, from 0


@dataclass(frozen=True)
class DialogueSession:
    number: int
    date: datetime  # the session's date (a missing one: a day after the previous session)
    turns: tuple[DialogueTurn, ...]


@dataclass(frozen=True)
class Dialogue:
    name: str
    speakers: tuple[str, str]
    sessions: tuple[DialogueSession, ...]
    queries: list[tuple[Query, str]]  # (query, question text), categories 1-4
    # dia_id -> the observations about that turn's speaker whose evidence is that turn (what
    # a capable model wrote of it: see bench.replay), in the order LoCoMo lists them.
    observed: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # Observations not in ``observed``: about one speaker, drawn from the other's turn (or
    # from no turn of the dialogue).
    unplaced_observations: int = 0

    def user_id(self, speaker: str) -> str:
        """The user a speaker is: one per conversation and speaker."""
        return f"locomo-{self.name}:{speaker}"

    def chat_id(self, session: DialogueSession, speaker: str) -> str:
        """The conversation (``session_id``) of one speaker in one LoCoMo session."""
        return f"locomo-{self.name}:s{session.number}:{speaker}"


@dataclass(frozen=True)
class Exchange:
    """One run of a speaker's chat: their turn (the user message) and the reply."""

    turn: DialogueTurn
    reply: str


def turn_text(raw: Mapping[str, Any]) -> str:
    """A turn's text; an image turn carries its caption: ``"{text} [image: {caption}]"``."""
    text = str(raw.get("text") or "")
    caption = raw.get("blip_caption")
    return f"{text} [image: {caption}]" if caption else text


def chat(session: DialogueSession, speaker: str) -> list[Exchange]:
    """``speaker``'s chat in ``session``: each of their turns is a user message, answered by
    the other speaker's turns up to their next one (joined by a newline), or by
    :data:`NO_REPLY` when none follows. Turns of the other speaker before ``speaker``'s
    first one are not part of this chat."""
    out: list[Exchange] = []
    current: DialogueTurn | None = None
    replies: list[str] = []
    for turn in session.turns:
        if turn.speaker != speaker:
            if current is not None:
                replies.append(turn.text)
            continue
        if current is not None:
            out.append(Exchange(current, "\n".join(replies) or NO_REPLY))
        current, replies = turn, []
    if current is not None:
        out.append(Exchange(current, "\n".join(replies) or NO_REPLY))
    return out


def turn_instant(session: DialogueSession, turn: DialogueTurn) -> datetime:
    """The moment a turn is said: its session's date plus its index in seconds."""
    return session.date + timedelta(seconds=turn.index)


def instants(dialogue: Dialogue) -> dict[tuple[str, datetime], str]:
    """(user, instant) -> dia_id of every turn: how a stored item's observed time names
    the turn it came from. Two turns of one user at one instant raise ValueError."""
    out: dict[tuple[str, datetime], str] = {}
    for session in dialogue.sessions:
        for turn in session.turns:
            key = (dialogue.user_id(turn.speaker), turn_instant(session, turn))
            if key in out:
                raise ValueError(f"turns {out[key]} and {turn.dia_id} share an instant")
            out[key] = turn.dia_id
    return out


def date_label(when: datetime) -> str:
    """``8 May 2023``."""
    return f"{when.day} {when:%B %Y}"


def raw_text(session: DialogueSession, turn: DialogueTurn) -> str:
    """A turn stored verbatim: ``"[8 May 2023] Caroline: ..."``."""
    return f"[{date_label(session.date)}] {turn.speaker}: {turn.text}"


def _sessions(sample: dict[str, Any]) -> tuple[DialogueSession, ...]:
    convo = sample.get("conversation", sample)
    numbers = sorted(int(m.group(1)) for k in convo if (m := _SESSION.match(k)))
    out: list[DialogueSession] = []
    previous = datetime(2000, 1, 1, tzinfo=UTC)
    for n in numbers:
        date = parse_date(convo.get(f"session_{n}_date_time")) or previous + timedelta(days=1)
        turns = tuple(
            DialogueTurn(str(raw.get("speaker")), str(raw.get("dia_id")), turn_text(raw), i)
            for i, raw in enumerate(convo[f"session_{n}"] or [])
        )
        out.append(DialogueSession(n, date, turns))
        previous = date
    return tuple(out)


def _speakers(sample: dict[str, Any], sessions: tuple[DialogueSession, ...]) -> tuple[str, str]:
    """``speaker_a`` and ``speaker_b``; when missing, the speakers in order of appearance."""
    convo = sample.get("conversation", sample)
    seen = [*dict.fromkeys(t.speaker for s in sessions for t in s.turns), "A", "B"]
    a = str(convo.get("speaker_a") or seen[0])
    b = str(convo.get("speaker_b") or next(x for x in seen if x != a))
    return a, b


def _observed(
    sample: dict[str, Any], sessions: tuple[DialogueSession, ...]
) -> tuple[dict[str, tuple[str, ...]], int]:
    """dia_id -> observations about the speaker of that turn drawn from it; and how many
    observations are not about the speaker of a turn they name."""
    speaker_of = {t.dia_id: t.speaker for s in sessions for t in s.turns}
    observed: dict[str, list[str]] = {}
    unplaced = 0
    for _, by_speaker in sorted(_observations(sample).items(), key=_session_number):
        for speaker, entries in (by_speaker or {}).items():
            for entry in entries or ():
                if not entry or not isinstance(entry[0], str) or not entry[0].strip():
                    continue
                ids = [i for i in sorted(parse_ids(entry[1:])) if speaker_of.get(i) == speaker]
                unplaced += not ids
                for dia_id in ids:
                    observed.setdefault(dia_id, []).append(entry[0].strip())
    return {k: tuple(v) for k, v in observed.items()}, unplaced


def _observations(sample: dict[str, Any]) -> dict[str, Any]:
    """``session_N_observation`` -> {speaker: [[fact, dia_id, ...], ...]}, wherever kept."""
    found: dict[str, Any] = dict(sample.get("observation") or {})
    found.update({k: v for k, v in sample.items() if _OBS.match(k)})
    return {k: v for k, v in found.items() if _OBS.match(k)}


def _session_number(item: tuple[str, Any]) -> int:
    match = _OBS.match(item[0])
    return int(match.group(1)) if match else 0


def load_dialogues(folder: Path) -> list[Dialogue]:
    """The dialogue of every conversation in ``folder`` (sorted by file name)."""
    out: list[Dialogue] = []
    for name, sample in _samples(folder):
        sessions = _sessions(sample)
        queries = _queries(sample, f"locomo-{name}")
        observed, unplaced = _observed(sample, sessions)
        speakers = _speakers(sample, sessions)
        out.append(Dialogue(name, speakers, sessions, queries, observed, unplaced))
    return out
