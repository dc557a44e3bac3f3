"""A deterministic, dependency-free extractor for a narrow set of English statements.

:class:`RuleExtractor` reads only the **user's** messages of a turn, sentence by
sentence, and recognizes plain first-person statements:

* where the user lives and moves ("I live in NYC", "I'm based in Austin", "we relocated
  to Denver", "I've just moved to SF", "we moved from NYC to SF"; as a whole sentence
  without "I" too: "Moved to SF last weekend!", "Living in Lisbon now") ->
  ``home.city``; where they are from, were born or grew up -> ``person.origin``;
* rent and other recurring amounts ("I pay $2,400 a month in rent", "I live in NYC, rent
  is $2,400", "I pay $15 a month for Netflix") -> ``home.rent`` / ``expense.<thing>``; a
  rent said as a number alone ("my rent is 2400 a month") keeps no currency;
* name and age -> ``person.name`` / ``person.age``; job and employer ("I work at X",
  "I'm a nurse at X", "I joined X", "Started a new job at X today!") ->
  ``work.employer`` / ``work.role``;
* partner, married or engaged ("I got married last month") and pets ->
  ``family.partner`` / ``family.status`` / ``pets.<animal>``; allergies, intolerances
  and diet -> ``health.allergy.<x>`` / ``diet``;
* likes ("I'm a big fan of jazz"), dislikes, preferences, favorites and games played ->
  ``likes.<x>``, ``dislikes.<x>``, ``prefers.<x>``, ``favorite.<thing>``,
  ``activity.<x>``;
* negations ("I no longer ...", "I don't ... anymore", "I quit ...", "I moved out of X",
  "I'm not vegetarian anymore"), which invalidate the matching candidate belief.

A state said to have lasted holds now ("I've been vegetarian for years", "I've been
working at X since 2019"), and a change said as made is made ("I've quit smoking").

A short answer is read with the question the assistant closed its message before the turn
with (:attr:`~..base.Turn.before`): "Lisbon." after "Where do you live?" is "I live in
Lisbon", for a few such questions (:mod:`.answers`).

It skips questions, hypotheticals and plans ("if I moved to Paris", "I might move",
"I'd love to live in Rome someday", "I want to ..."), other people's facts ("my sister
lives in Rome") and everything the assistant said. A message is read into clauses by
:mod:`.clauses`: a verb after "and" is the user's only when the clause before is
the user's own statement ("I live in NYC and pay ...", not "Take care and enjoy the rest
of your day"); a bracketed note ("[image: ...]") is a sentence of its own. An object
that does not name a thing is no belief (:mod:`.objects`): a remark about the
other person ("I love your turtles"), a word pointing back at what was said or shown
("I love it", "I love the colors"), a clause ("I love how it ...", "that'll keep ...").
When unsure it stores nothing: the turn is kept verbatim as an episode anyway. Anything
phrased differently is simply not seen: this is a zero-cost fallback, not language
understanding.

Candidates decide the op. Keys ``home.city``, ``home.rent``, ``person.*``, ``work.*``,
``family.partner``, ``diet``, ``favorite.*`` and ``expense.*`` hold one value: a new
value SUPERSEDEs the candidate with that key. ``pets.*`` holds several (a new pet is an
ADD). Other keys name one thing each (``likes.sushi``): a rewording is an UPDATE. A
restatement of a candidate is an ADD of the candidate's exact content, which the engine
records as a confirmation. A negation INVALIDATEs the candidates it matches, or does
nothing when none does.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from ...days.stated import parse_when
from ...engine.ops import Op
from ..base import Candidate, Extraction, Turn
from ..hygiene import screen
from .answers import restated
from .clauses import normalize, statements
from .negations import NEGATIONS
from .patterns import ASSERTIONS
from .vocab import Fact, expand_place

__all__ = ["RuleExtractor", "extract_facts"]

RULES = (*NEGATIONS, *ASSERTIONS)
_SINGLE_KEYS = frozenset(
    "home.city home.rent person.name person.age person.origin work.employer work.role "
    "education.school family.partner family.status diet".split()
)
_SINGLE_PREFIXES = ("favorite.", "expense.")
_MULTI_PREFIXES = ("pets.",)
_OPPOSITE = {"likes.": "dislikes.", "dislikes.": "likes."}

_STOP = frozenset(
    """a an the my our their his her to of in at for on with and or is are am be been was
    i i'm we you it that this do don't not no longer anymore any more have has had
    does""".split()
)


@dataclass(frozen=True)
class _Said:
    fact: Fact
    evidence: str
    valid_from: datetime | None


def _match(clause: str) -> list[Fact]:
    for pattern, build in RULES:
        m = pattern.search(clause)
        if m:
            facts = build(m)
            if facts:
                return facts
    return []


def extract_facts(text: str, observed_at: datetime) -> list[tuple[Fact, str, datetime | None]]:
    """The facts one user message states, with their sentence and stated start time."""
    out: list[tuple[Fact, str, datetime | None]] = []
    for sentence, raw in statements(text):
        clause, when = parse_when(normalize(raw), observed_at)
        for fact in _match(normalize(clause)):
            if fact.negate:  # what the message said before and now takes back is not said
                out = [s for s in out if s[0].negate or not _takes_back(fact, s[0])]
            if not fact.within_message:
                out.append((fact, sentence, when))
    return out


def _takes_back(negation: Fact, said: Fact) -> bool:
    """Whether ``negation`` ends ``said``, a fact stated earlier in the same message ("I
    live in Denver, but I moved out of Denver / moved out in May")."""
    if said.key is None or not _ends_key(negation.keys, said.key):
        return False
    return negation.value is None or _says(said.content or "", negation.value)


def _stem(word: str) -> str:
    for suffix in ("ing", "es", "ed", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "aeiouls":
                word = word[:-1]
            break
    return word


_STOP_STEMS = frozenset(_stem(s) for s in _STOP)
_WORD = re.compile(r"[a-z0-9$€£][a-z0-9,.'\-]*")


@functools.lru_cache(maxsize=4096)
def _words(text: str) -> frozenset[str]:
    """The stems of ``text``'s words but stop words (cached: a user's candidates are
    compared with every fact of every turn)."""
    words = _WORD.findall(text.casefold())
    # "$2,400" is also "2,400": an amount said without its currency is the same amount.
    words += [w[1:] for w in words if w[0] in "$€£" and len(w) > 1]
    return frozenset(_stem(w) for w in words) - _STOP_STEMS


def _mentions(candidate: Candidate, value: str) -> bool:
    key = (candidate.key or "").replace(".", " ").replace("-", " ")
    return _says(f"{candidate.content} {key}", value)


def _says(text: str, value: str) -> bool:
    """Whether ``text`` holds every word of ``value`` (a place by its full name)."""
    wanted = _words(expand_place(value))
    return bool(wanted) and wanted <= _words(text)


_INFER = (
    (re.compile(r"^Lives in "), "home.city"),
    (re.compile(r"^Pays .* in rent$"), "home.rent"),
    (re.compile(r"^Name is "), "person.name"),
    (re.compile(r"^Works at "), "work.employer"),
    (re.compile(r"^Works as |^Is an? (?:student|pupil|undergrad|postgrad|postdoc)"), "work.role"),
    (re.compile(r"^Studies at "), "education.school"),
    (
        re.compile(r"^(?:Has a (?:wife|husband|partner|girlfriend|boyfriend)|Is married to) "),
        "family.partner",
    ),
    (re.compile(r"^(?:Is (?:vegetarian|vegan|pescatarian)|Follows a \w+ diet)$"), "diet"),
)


def _key_of(candidate: Candidate) -> str | None:
    """The candidate's key, or the one its content implies when it has none."""
    if candidate.key:
        return candidate.key
    for pattern, key in _INFER:
        if pattern.search(candidate.content):
            return key
    return None


def _same(a: str, b: str) -> bool:
    return " ".join(a.casefold().split()).rstrip(".") == " ".join(b.casefold().split()).rstrip(".")


def _kind(key: str) -> str:
    if key in _SINGLE_KEYS or key.startswith(_SINGLE_PREFIXES):
        return "single"
    return "multi" if key.startswith(_MULTI_PREFIXES) else "specific"


def reconcile(said: Sequence[_Said], candidates: Sequence[Candidate]) -> list[Op]:
    """Turn stated facts into ops against the candidates (see the module docstring)."""
    keyed = [(c, _key_of(c)) for c in candidates]
    asserted = {s.fact.key for s in said if not s.fact.negate}
    # A later statement of a one-valued key wins over an earlier one in the same turn.
    last: dict[str, int] = {}
    for i, s in enumerate(said):
        if s.fact.key and not s.fact.negate and _kind(s.fact.key) == "single":
            last[s.fact.key] = i
    ops: list[Op] = []
    used: set[str] = set()
    seen: set[tuple[str, str]] = set()
    for i, s in enumerate(said):
        f = s.fact
        if f.negate:
            for c, key in keyed:
                if c.alias in used or not _negation_hits(f, key, c):
                    continue
                if key is not None and key in asserted:
                    continue  # replaced in this same turn: the SUPERSEDE covers it
                used.add(c.alias)
                ops.append(
                    Op.invalidate(c.alias, f.reason or "no longer true", evidence=s.evidence)
                )
            continue
        assert f.key is not None and f.content is not None
        if last.get(f.key, i) != i or (f.key, f.content.casefold()) in seen:
            continue
        seen.add((f.key, f.content.casefold()))
        ops.extend(_assert(f, s, [(c, k) for c, k in keyed if c.alias not in used], used))
    if "home.rent" not in asserted:
        ops.extend(_rent_left_behind(ops, keyed, used))
    return ops


def _rent_left_behind(
    ops: Sequence[Op], keyed: Sequence[tuple[Candidate, str | None]], used: set[str]
) -> list[Op]:
    """A move ends the rent of the home left (no new rent said): INVALIDATE it as of the
    move, so that the old home's rent does not stay current beside the new home."""
    homes = {c.alias for c, key in keyed if key == "home.city"}
    move = next(
        (op for op in ops if op.op in ("SUPERSEDE", "INVALIDATE") and op.target in homes), None
    )
    if move is None:
        return []
    rents = [c for c, key in keyed if key == "home.rent" and c.alias not in used]
    used.update(c.alias for c in rents)
    return [
        Op.invalidate(
            c.alias,
            "moved: this rent was for the previous home",
            evidence=move.evidence,
            valid_to=move.valid_from,
        )
        for c in rents
    ]


def _ends_key(keys: tuple[str, ...], key: str) -> bool:
    """Whether a negation naming ``keys`` ends a fact of ``key`` (see :class:`Fact`)."""
    return any(
        key == k or (k.endswith(".") and key.startswith(k)) or key.startswith(k + ".") for k in keys
    )


def _negation_hits(f: Fact, key: str | None, c: Candidate) -> bool:
    if f.keys:
        if key is None or not _ends_key(f.keys, key):
            return False
        return f.value is None or _mentions(c, f.value)
    return f.value is not None and _mentions(c, f.value)


def _assert(
    f: Fact, s: _Said, pool: list[tuple[Candidate, str | None]], used: set[str]
) -> list[Op]:
    assert f.key is not None and f.content is not None
    same = [c for c, k in pool if k == f.key]
    kind = _kind(f.key)
    for c in same:
        if _same(c.content, f.content) or (
            kind != "specific" and f.value and _mentions(c, f.value)
        ):
            used.add(c.alias)
            return [Op.add(c.content, key=f.key, evidence=s.evidence)]  # a confirmation
    if kind == "single" and same:
        used.update(c.alias for c in same)
        first, *rest = same
        return [
            Op.supersede(
                first.alias,
                f.content,
                key=f.key,
                evidence=s.evidence,
                reason=f"new {f.key}",
                valid_from=s.valid_from,
            ),
            *(
                Op.invalidate(c.alias, f"replaced by: {f.content}", evidence=s.evidence)
                for c in rest
            ),
        ]
    refinable = (
        same
        if kind == "specific"
        else [c for c in same if f.generic and _same(c.content, f.generic)]
    )
    if refinable:
        used.add(refinable[0].alias)
        return [Op.update(refinable[0].alias, f.content, evidence=s.evidence, reason="refined")]
    prefix = next((p for p in _OPPOSITE if f.key.startswith(p)), None)
    if prefix is not None:
        opposite = _OPPOSITE[prefix] + f.key[len(prefix) :]
        for c, k in pool:
            if k == opposite:
                used.add(c.alias)
                return [
                    Op.supersede(
                        c.alias, f.content, key=f.key, evidence=s.evidence, reason="changed mind"
                    )
                ]
    return [Op.add(f.content, key=f.key, evidence=s.evidence, valid_from=s.valid_from)]


def _answered(
    before: str, text: str, observed_at: datetime
) -> list[tuple[Fact, str, datetime | None]]:
    """The facts a short answer states as a reply to the question before it
    (:mod:`.answers`), its evidence the user's own words."""
    statement = restated(before, text)
    if statement is None:
        return []
    words = " ".join(text.split())
    return [(fact, words, when) for fact, _, when in extract_facts(statement, observed_at)]


class RuleExtractor:
    """Deterministic English first-person pattern extractor; see the module docstring."""

    name = "rules-v1"
    # Extractions cost no model call: the worker may take many users' turns at once, and
    # then writes them in few transactions (its group commit).
    concurrency = 64

    async def extract(
        self, turn: Turn, candidates: Sequence[Candidate], now: datetime
    ) -> Extraction:
        """Ops for the user's messages of ``turn``, screened for secrets."""
        said: list[_Said] = []
        observed = turn.observed_at or now
        for index, message in enumerate(turn.messages):
            if message.role != "user":
                continue
            facts = extract_facts(message.text, observed)
            if not facts and index == 0 and turn.before:
                facts = _answered(turn.before, message.text, observed)
            said.extend(_Said(fact, sentence, when) for fact, sentence, when in facts)
        screened = screen(reconcile(said, candidates))
        return Extraction(ops=screened.ops, notes=screened.notes)

    def __repr__(self) -> str:
        return "RuleExtractor()"
