"""Vocabulary shared by the rule extractor's pattern tables, and the :class:`Fact` they propose.

Each rule is an anchored regular expression over a normalized clause ("I live in NYC")
and a builder that turns the match into :class:`Fact` proposals: an assertion (key and
third-person content) or a negation (which keys, and optionally which value, stopped
being true). Matching candidates and choosing the op happens in :mod:`.rules`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from .objects import is_object


@dataclass(frozen=True)
class Fact:
    """What one clause says: ``content`` for ``key``, or (``negate``) that it ended.

    ``value`` is the part two statements must share to be the same fact ("San Francisco");
    ``generic`` the unnamed form a named one refines ("Has a dog" -> "Has a dog named Rex").
    A negation names its ``keys`` (a trailing ``.`` means any key with that prefix; none
    means any candidate) and, when given, the ``value`` the ended fact must mention; a
    ``within_message`` one only takes back what the same message said before it ("I live in
    Denver, but I moved out in May"): alone, too vague to end a stored belief ("I quit").
    """

    key: str | None
    content: str | None = None
    value: str | None = None
    generic: str | None = None
    negate: bool = False
    keys: tuple[str, ...] = ()
    reason: str | None = None
    within_message: bool = False


Builder = Callable[[re.Match[str]], list[Fact]]
Rule = tuple[re.Pattern[str], Builder]


def registrar(table: list[Rule]) -> Callable[..., Callable[[Builder], Builder]]:
    """A decorator factory appending ``(pattern, builder)`` rows to ``table``, in order."""

    def rule(*patterns: str) -> Callable[[Builder], Builder]:
        def register(builder: Builder) -> Builder:
            table.extend((re.compile(p), builder) for p in patterns)
            return builder

        return register

    return rule


# -- vocabulary ------------------------------------------------------------------------

IM = r"(?i:I'm|I\s+am|we're|we\s+are)"
I_ = r"(?i:I|we)"
END = r"\s*$"
NOT = r"(?i:don't|do\s+not|no\s+longer|never)"
ANYMORE = r"(?:\s+(?i:anymore|any\s+more|any\s+longer|now))?"
# Capitals and small letters beyond ASCII (Latin with diacritics, Greek, Cyrillic), so
# that "Évora", "Zoë" and "Łódź" read like "Paris" and "Sam".
_UP = "A-Z" + "".join(c for c in map(chr, range(0xC0, 0x530)) if c.isupper() and c.isalpha())
_LOW = "a-z" + "".join(c for c in map(chr, range(0xC0, 0x530)) if c.islower() and c.isalpha())
_CAP = rf"[{_UP}][\w'.&\-]*"
_JOIN = r"(?:,?\s+(?:(?:de|del|da|la|le|of|on|upon|am|im|der|sur)\s+)?)"
_ALIASES = {
    "nyc": "New York City",
    "ny": "New York",
    "sf": "San Francisco",
    "la": "Los Angeles",
    "dc": "Washington, D.C.",
    "d.c.": "Washington, D.C.",
    "philly": "Philadelphia",
    "vegas": "Las Vegas",
    "the bay": "the Bay Area",
}
_ALIAS_ALT = "|".join(re.escape(a) for a in sorted(_ALIASES, key=len, reverse=True))
PLACE = rf"(?P<place>(?i:{_ALIAS_ALT})(?![\w.])|(?:the\s+)?{_CAP}(?:{_JOIN}{_CAP}){{0,4}})"
ORG = (
    rf"(?P<org>[{_UP}0-9][\w'.&\-]*(?:(?:\s+|\s*&\s*|\s+(?:of|for|the|de)\s+)[{_UP}0-9]"
    r"[\w'.&\-]*){0,4})"
)
NAME = rf"(?P<name>[{_UP}][{_LOW}'\-]+(?:\s+[{_UP}][{_LOW}'\-]+){{0,2}})"
PHRASE = r"(?P<x>[^,;]{2,80}?)"
ROLE = r"(?P<role>(?i:[a-z][a-z\-]*(?:\s+[a-z][a-z\-]*){0,3}?))"
MONEY = (
    r"(?P<amount>[$€£]\s?\d[\d,]*(?:\.\d{1,2})?(?i:k)?"
    r"|\d[\d,]*(?:\.\d{1,2})?\s?(?i:dollars|bucks|euros|pounds|usd|eur|gbp)\b)"
)
# A number said without a currency (where only an amount can be meant, as of rent).
NUMBER = r"(?P<number>\d[\d,]*(?:\.\d{1,2})?(?i:k)?)"


def per(name: str = "period") -> str:
    return (
        rf"(?P<{name}>(?i:(?:a|an|per|each|every)\s+(?:month|week|year)"
        r"|/\s?(?:mo|month|wk|week|yr|year)|monthly|weekly|yearly|annually))"
    )


PERIOD = per()
PERIOD2 = per("period2")
PARTNER = (
    r"(?P<rel>(?i:wife|husband|partner|girlfriend|boyfriend|fiancée|fiancee|fiancé|fiance|spouse))"
)
ANIMALS = {
    "dog": "dog", "dogs": "dog", "puppy": "dog", "cat": "cat", "cats": "cat", "kitten": "cat",
    "rabbit": "rabbit", "rabbits": "rabbit", "bunny": "rabbit", "hamster": "hamster",
    "parrot": "parrot", "bird": "bird", "birds": "bird", "fish": "fish", "turtle": "turtle",
    "snake": "snake", "lizard": "lizard", "horse": "horse", "guinea pig": "guinea pig",
    "puppies": "dog", "kittens": "cat", "hamsters": "hamster", "parrots": "parrot",
    "turtles": "turtle", "snakes": "snake", "lizards": "lizard", "horses": "horse",
    "guinea pigs": "guinea pig",
}  # fmt: skip
# Breeds are named as said ("Has a beagle named Max") and filed under their animal.
BREEDS = {
    "beagle": "dog", "labrador": "dog", "poodle": "dog", "terrier": "dog", "retriever": "dog",
    "bulldog": "dog", "spaniel": "dog", "husky": "dog", "dachshund": "dog", "chihuahua": "dog",
    "corgi": "dog", "collie": "dog", "pug": "dog", "siamese": "cat", "persian": "cat",
    "maine coon": "cat", "tabby": "cat", "golden retriever": "dog", "german shepherd": "dog",
    "border collie": "dog", "french bulldog": "dog",
}  # fmt: skip
ANIMALS |= BREEDS
ANIMAL = rf"(?P<animal>(?i:{'|'.join(sorted(ANIMALS, key=len, reverse=True))}))\b"
COUNT = r"(?P<count>(?i:a|an|one|two|three|four|five|\d))"
DIET = r"(?P<diet>(?i:vegetarian|vegan|pescatarian|pescetarian|keto|paleo|flexitarian))"
JOB_WORDS = frozenset(
    """engineer developer designer teacher nurse doctor physician lawyer accountant manager
    scientist analyst student consultant writer artist chef cook programmer architect
    researcher professor dentist pharmacist therapist electrician plumber carpenter
    mechanic pilot firefighter officer journalist editor photographer musician
    entrepreneur founder ceo cto cfo freelancer paralegal banker recruiter librarian
    veterinarian vet surgeon salesperson marketer technician administrator translator""".split()
)
# Roles of people who study: "I'm a student at MIT" is not a job at MIT.
STUDY_WORDS = frozenset("student pupil undergraduate undergrad postgrad postdoc".split())
# "I work as a team", "I'm a big fan": not jobs.
NON_ROLES = frozenset(
    """fan regular member customer guest user client big huge person team group pair couple
    family unit whole one community""".split()
)
PEOPLE = frozenset(
    """sister brother mom mother dad father friend friends wife husband partner son daughter
    kids kid children parents boss coworker colleague roommate neighbor girlfriend
    boyfriend aunt uncle cousin grandma grandpa""".split()
)
DIET_CONTENT = {
    "vegetarian": "Is vegetarian", "vegan": "Is vegan", "pescatarian": "Is pescatarian",
    "pescetarian": "Is pescatarian", "keto": "Follows a keto diet",
    "paleo": "Follows a paleo diet", "flexitarian": "Is flexitarian",
}  # fmt: skip
PRONOUNS = frozenset("it that this them you him her those these what how when there".split())
STRIP_TAIL = re.compile(
    r"\s+(?i:a\s+lot|so\s+much|very\s+much|too|as\s+well|though|these\s+days|a\s+ton)$"
)
_LIST_SPLIT = re.compile(r"\s*,\s*(?:and\s+|or\s+)?|\s+(?:and|or|&)\s+")
NOT_NAMES = frozenset(
    """Monday Tuesday Wednesday Thursday Friday Saturday Sunday January February March April
    May June July August September October November December Today Tomorrow Yesterday""".split()
)


def slug(text: str) -> str:
    """A key segment: lower case, articles and possessives dropped, words joined by '-'."""
    words = re.findall(r"[a-z0-9]+", text.casefold())
    words = [w for w in words if w not in ("the", "a", "an", "my", "our", "to")]
    return "-".join(words)[:40].strip("-")


def expand_place(place: str) -> str:
    """Expand common abbreviations (NYC -> New York City) and tidy a captured place."""
    place = place.strip().rstrip(",")
    words = place.split()
    while words and words[-1] in NOT_NAMES:  # "Berlin Monday": a date, not the place
        words.pop()
    place = " ".join(words)
    return _ALIASES.get(place.casefold(), place)


def article(word: str) -> str:
    return "an" if word[:1].lower() in "aeiou" else "a"


def items(text: str, *, definite: bool = True) -> list[str]:
    """The things a clause's object lists ("hiking and skiing"), in the third person; none
    when it is not a list of things (see :func:`.objects.is_object`)."""
    text = STRIP_TAIL.sub("", text.strip().rstrip(".!"))
    listed = [item.strip() for item in _LIST_SPLIT.split(text)]
    if not is_object(text, [item for item in listed if item], definite=definite):
        return []
    if listed[0].lower().startswith("to "):  # "to read and write poetry": "to" for each
        listed = [i if not i or i.lower().startswith("to ") else f"to {i}" for i in listed]
    out = []
    for item in listed:
        if item and item.split()[0].lower() not in PRONOUNS and len(item.split()) <= 6:
            out.append(third_person(item))
    return out


def ok_name(name: str) -> bool:
    return name.split()[0] not in NOT_NAMES


def money(m: re.Match[str]) -> str:
    """The amount matched, written "$2,400"; a bare :data:`NUMBER` has no currency
    ("2,400"), and is no amount below 10 ("" then)."""
    raw = (m["amount"] or "").replace(" ", "")
    symbol = next((c for c in raw if c in "$€£"), None)
    if not raw:
        raw, symbol = m["number"].replace(" ", ""), ""
    elif symbol is None:
        unit = re.sub(r"[\d.,]", "", raw).lower()
        symbol = {"euros": "€", "eur": "€", "pounds": "£", "gbp": "£"}.get(unit, "$")
    number = re.sub(r"[^\d.]", "", raw)
    value = float(number) * (1000 if raw.lower().endswith("k") else 1)
    if not symbol and value < 10:
        return ""
    text = f"{value:,.2f}" if value % 1 else f"{int(value):,}"
    return f"{symbol}{text}"


def period(m: re.Match[str], default: str = "") -> str:
    groups = m.groupdict()
    period = (groups.get("period") or groups.get("period2") or "").lower()
    if not period:
        return default
    if "month" in period or period.endswith("mo"):
        return "a month"
    if "week" in period or period.endswith("wk"):
        return "a week"
    return "a year"


def third_person(text: str) -> str:
    text = re.sub(r"\bmy\b", "their", text, flags=re.IGNORECASE)
    text = re.sub(r"\bmine\b", "theirs", text, flags=re.IGNORECASE)
    return re.sub(r"\bme\b", "them", text, flags=re.IGNORECASE)


def thing_slug(thing: str) -> str:
    words = [
        w
        for w in slug(thing).split("-")
        if w not in ("membership", "subscription", "plan", "bill", "pass")
    ]
    return "-".join(words) or slug(thing)
