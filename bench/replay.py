"""A capable model's extraction answers, replayed from LoCoMo's observations.

LoCoMo ships, for each session, facts an LLM wrote about each speaker, each naming the turn
(``dia_id``) it came from (:attr:`bench.locomo.Dialogue.observed`). Replayed as a model's
answers, they let the real model-extractor path of this library and of mem0 run end to end,
offline and deterministically: the answer to a request about a turn is the observations
drawn from that turn, in the format the request asks for. The turn is found from the
user's words the request carries; the replay never guesses: a request it cannot place
(words of no turn, or of several turns with different observations) is answered with no
fact and counted.

Both systems get the same facts for the same turn. Each is told what it was built to be
told: this library's extractor gets ops (``ADD`` with the fact as the statement; a fact
restating an active belief shown among the request's candidates is ``ADD``-ed with that
belief's exact text, which the engine records as a confirmation); mem0's extraction call
gets its ``{"memory": [...]}`` list, a fact restating one of its existing memories left out,
as its prompt asks. Pure: the HTTP side is :mod:`bench.replay_server`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from .locomo import Dialogue, turn_instant

OURS = "mem01session"
MEM0 = "mem0"
# What restates a fact: the same words, or nearly (this share of both texts' words).
RESTATES = 0.8
_WORD = re.compile(r"[a-z0-9]+")
_CANDIDATE = re.compile(r"^(b\d+): (.*?)(?: \[[^\]\n]*\])?(?: \(since \d{4}-\d{2}-\d{2}\))?$")


def _said(text: str) -> str:
    return " ".join(text.split())


def words(text: str) -> frozenset[str]:
    return frozenset(_WORD.findall(text.casefold()))


def restates(fact: str, other: str) -> bool:
    """Whether ``other`` says what ``fact`` says: (nearly) the same words."""
    a, b = words(fact), words(other)
    return bool(a and b) and len(a & b) / len(a | b) >= RESTATES


@dataclass(frozen=True)
class _Said:
    dia_id: str
    instant: datetime
    facts: tuple[str, ...]


class Observations:
    """The facts of every turn of some dialogues, found from what the user said."""

    def __init__(self, dialogues: Iterable[Dialogue]) -> None:
        self._by_words: dict[str, list[_Said]] = {}
        for d in dialogues:
            for session in d.sessions:
                for turn in session.turns:
                    said = _Said(turn.dia_id, turn_instant(session, turn),
                                 d.observed.get(turn.dia_id, ()))  # fmt: skip
                    self._by_words.setdefault(_said(turn.text), []).append(said)

    def facts(self, user_words: str, observed: datetime | None = None) -> tuple[str, ...] | None:
        """The facts of the turn whose user message is ``user_words``; ``observed``: when it
        was said, if the request says (it tells apart turns of the same words). None: no
        turn, or several with different facts."""
        turns = self._by_words.get(_said(user_words), [])
        if observed is not None and len(turns) > 1:
            turns = [t for t in turns if t.instant == observed] or turns
        answers = {t.facts for t in turns}
        return answers.pop() if len(answers) == 1 else None


@dataclass(frozen=True)
class Request:
    """What a chat request asks, as far as the replay reads it."""

    system: str  # OURS, MEM0, or "" (not an extraction request the replay knows)
    user_words: str | None  # the user's message in the turn
    observed: datetime | None = None
    known: tuple[str, ...] = ()  # the beliefs (candidates) or memories it shows
    aliases: tuple[str, ...] = ()  # the candidates' aliases (ours), in order


def read_request(body: Mapping[str, Any]) -> Request:
    """Which system's extraction request ``body`` is, and what it asks about."""
    messages = body.get("messages") or []
    texts = [m.get("content") or "" for m in messages if isinstance(m, dict)]
    user = texts[-1] if len(texts) > 1 else ""
    if "\nTurn (observed " in user and "Candidate beliefs (active):" in user:
        return _ours(user)
    if "## New Messages\n" in user:
        return _mem0(user)
    return Request("", None)


def _user_words(turn: str) -> str | None:
    """The user's message in ``user: ...`` / ``assistant: ...`` lines (the reply may
    span lines; the user's message comes first)."""
    if not turn.startswith("user: "):
        return None
    return turn[len("user: ") :].split("\nassistant: ", 1)[0].rstrip("\n")


def _ours(user: str) -> Request:
    head, _, turn = user.partition("\nTurn (observed ")
    stamp, _, turn = turn.partition("):\n")
    aliases, known = [], []
    for line in head.split("\n\n", 2)[1].splitlines()[1:] if "\n\n" in head else []:
        match = _CANDIDATE.match(line)
        if match:
            aliases.append(match.group(1))
            known.append(match.group(2))
    try:
        observed: datetime | None = datetime.fromisoformat(stamp)
    except ValueError:
        observed = None
    return Request(OURS, _user_words(turn), observed, tuple(known), tuple(aliases))


def _mem0(user: str) -> Request:
    new = user.split("## New Messages\n", 1)[1].split("\n\n## Observation Date", 1)[0]
    existing = user.split("## Existing Memories\n", 1)[1].split("\n\n## ", 1)[0]
    try:
        memories = [str(m.get("text", "")) for m in json.loads(existing)]
    except (ValueError, AttributeError):
        memories = []
    return Request(MEM0, _user_words(new), known=tuple(memories))


def answer_ours(facts: Sequence[str], request: Request) -> str:
    """The ops this library's extractor asks for (its strict schema: every field)."""
    evidence = request.user_words or ""
    ops: list[dict[str, Any]] = []
    for fact in facts:
        restated = next((k for k in request.known if restates(fact, k)), None)
        ops.append(
            {
                "op": "ADD",
                "target": None,
                "targets": [],
                "content": restated or fact,
                "key": None,
                "confidence": 0.9,
                "evidence": _sentence(evidence, fact),
                "reason": "restated" if restated else None,
                "valid_from": None,
            }
        )
    return json.dumps({"ops": ops})


def answer_mem0(facts: Sequence[str], request: Request) -> str:
    """mem0's extraction answer: the new facts; one its existing memories state, left out."""
    new = [f for f in facts if not any(restates(f, k) for k in request.known)]
    return json.dumps(
        {"memory": [{"id": str(i), "text": f, "attributed_to": "user"} for i, f in enumerate(new)]}
    )


_SENTENCE = re.compile(r"[^.!?]+[.!?]*")


def _sentence(text: str, fact: str) -> str:
    """The sentence of ``text`` that shares most words with ``fact`` (a model's evidence:
    the user's exact words the fact rests on)."""
    sentences = [s.strip() for s in _SENTENCE.findall(text) if s.strip()] or [text]
    wanted = words(fact)
    best: str = max(sentences, key=lambda s: len(words(s) & wanted))
    return best
