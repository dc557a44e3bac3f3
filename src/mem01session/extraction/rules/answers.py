"""Short answers read with the question they answer: "Lisbon." after "Where do you live?".

When the assistant's message before the turn (:attr:`~.base.Turn.before`) closes with a
question about one of a few slots (home, origin, employer, job, name, age, allergies,
pets), a short answer to it (a few words, no sentence of its own) stands for the
first-person statement it answers: "Lisbon." for "I live in Lisbon". :func:`restated`
writes that statement; the ordinary patterns then read it, with all their checks (a
place must look like one, a job must be one), so an answer they would not take from a
full sentence is not taken from a short one either. Anything else (a question back, a
refusal, a longer answer) restates nothing.
"""

from __future__ import annotations

import re

from ...engine.passages import sentences

# Statements whose value names a place, company or person (:func:`_named`); the others
# name a thing, which their own pattern checks (a job, an allergen, a pet, an age).
_NAMED = ("I live in", "I'm from", "I work at", "My name is")
# The assistant's closing question, lowercased; the statement a short answer makes of it;
# whether the answer names a thing (its first letter, capital only because it starts the
# answer, is lowered: "Peanuts.").
_QUESTIONS: tuple[tuple[re.Pattern[str], str, bool], ...] = tuple(
    (re.compile(pattern), template, not template.startswith(_NAMED))
    for pattern, template in (
        (
            r"\bwhere (?:do|are) you (?:currently |now )?(?:live|living|based|staying)\b"
            r"|\b(?:which|what) (?:city|town|country) (?:do|are) you (?:live|living) in\b"
            r"|\bwhere(?:'s| is) home\b",
            "I live in {}",
        ),
        (
            r"\bwhere (?:are you|do you come) (?:originally )?from\b"
            r"|\bwhere did you grow up\b|\bwhere were you born\b",
            "I'm from {}",
        ),
        (
            r"\bwhere do you work\b|\bwho do you work for\b"
            r"|\b(?:which|what) company do you work (?:at|for)\b",
            "I work at {}",
        ),
        (
            r"\bwhat do you do(?: for (?:a living|work))?$|\bwhat do you work as\b"
            r"|\bwhat(?:'s| is) your (?:job|profession|occupation)\b",
            "I'm {a} {}",
        ),
        (
            r"\bwhat(?:'s| is) your name\b|\bwhat should i call you\b"
            r"|\bhow should i (?:call|address) you\b",
            "My name is {}",
        ),
        (r"\bhow old are you\b", "I'm {}"),
        (
            r"\bare you allergic to anything\b|\b(?:do you have )?any (?:food )?allergies\b",
            "I'm allergic to {}",
        ),
        (r"\b(?:do you have )?any pets\b|\bdo you have (?:a )?pets?\b", "I have {}"),
    )
)

MAX_ANSWER_WORDS = 5
"""The longest answer read as one (words before its first comma)."""

_OPENER = re.compile(r"^(?:(?:yes|yeah|yep|yup|sure|well|oh|um+|uh+|ok|okay|so)\b[,!.]?\s*)+", re.I)
# Not a value: a refusal, an evasion, a negation, a question word, a place too vague to
# name one, or a sentence of its own.
_NOT_A_VALUE = re.compile(
    r"^(?:i|i'm|i've|i'd|we|we're|it|it's|that|this|you|my|our)\b"
    r"|\b(?:no|nope|not|none|nothing|nowhere|never|rather|secret|somewhere|anywhere|"
    r"everywhere|guess|depends|why|what|who|how|ha|haha+|lol|hm+|er+|erm|uh+|um+|"
    r"meh|wow|idk|dunno|question|near|around|outside|close|"
    r"downtown|suburbs?|countryside|abroad|home|here|there|same|usual)\b",
    re.I,
)
# The small words between the capitalized ones of a name ("Rio de Janeiro").
_CONNECTORS = frozenset("de da do del la le of the am upon von van der y and &".split())
# "In Lisbon." / "At Google." / "From Brazil.": the template says the preposition.
_PREPOSITION = re.compile(r"^(?:in|at|for|from)\s+", re.I)


def restated(before: str, answer: str) -> str | None:
    """The first-person statement ``answer`` makes as a reply to the question closing
    ``before`` (None: not a question this reads, or not a short answer to it)."""
    question = _closing_question(before)
    if question is None:
        return None
    value = _short_answer(answer)
    if value is None:
        return None
    for pattern, template, thing in _QUESTIONS:
        if pattern.search(question):
            if not thing and not _named(value):
                return None
            if thing and not value[1:2].isupper():
                value = value[0].casefold() + value[1:]
            if "{a}" in template:
                if value.casefold().startswith(("a ", "an ")):
                    return template.replace("{a} ", "").format(value)
                article = "an" if value[0].casefold() in "aeiou" else "a"
                return template.replace("{a}", article).format(value)
            return template.format(value)
    return None


def _named(value: str) -> bool:
    """Whether ``value`` is written as a name: capitalized words (any script that has
    capitals) and the small words between them."""
    words = value.split()
    return words[0][0].isupper() and all(
        w[0].isupper() or w[0].isdigit() or w.casefold() in _CONNECTORS for w in words[1:]
    )


def _closing_question(before: str) -> str | None:
    """The question among the last two sentences of ``before``, lowercased, its mark off."""
    for sentence in reversed(sentences(before)[-2:]):
        if sentence.endswith("?"):
            return " ".join(sentence.casefold().rstrip("?").split())
    return None


def _short_answer(answer: str) -> str | None:
    """The value a short answer gives: its first sentence, less an opening "yes," and
    what follows a comma; None for anything that is not a few plain words."""
    said = sentences(answer)
    if not said or said[0].endswith("?"):
        return None
    first = _OPENER.sub("", said[0]).strip()
    value = _PREPOSITION.sub("", first.split(",")[0].strip().rstrip(".!…").strip())
    words = value.split()
    if not words or len(words) > MAX_ANSWER_WORDS or _NOT_A_VALUE.search(value):
        return None
    return value
