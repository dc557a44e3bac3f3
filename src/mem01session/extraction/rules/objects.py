"""Which objects of a first-person clause are things a belief can be about.

"I love hiking and skiing" names two things the user likes; "I love your turtles", "I love
it and that'll keep my confidence up", "I love how it's both ..." and "I love the colors"
do not: they are about the other person, refer back to something said or shown, or are
clauses rather than names of things. The rule extractor stores nothing for those (the
turn's words are kept verbatim as an episode anyway), so this module errs on the side of
refusing.
"""

from __future__ import annotations

import re

__all__ = ["is_object", "opens_clause"]

_WORD = re.compile(r"[\w'\-]+")
# The other person, anywhere in the object: a remark about them, not about the user.
_SECOND_PERSON = frozenset("you your yours yourself yourselves ya y'all u ur thee thy".split())
# Words that point back at something in the conversation, or introduce a clause, anywhere
# in the object ("power you were talking about", "how it shows ...", "to think so").
_REFERRING = frozenset(
    """it its it's itself that this these those them they he she him his her hers
    their theirs he's she's they're we we're us i i'm i've i'd i'll
    because cause 'cause cuz since when whenever while if unless although though
    which who whom whose where what how why there's here's let's so""".split()
)
# A finite verb or auxiliary anywhere: the object is a clause ("... is incredible").
_FINITE = frozenset(
    """is are was were am isn't aren't wasn't weren't has hasn't had hadn't does doesn't
    did didn't will won't would wouldn't can can't could couldn't should shouldn't
    might must shall exist exists""".split()
)
_CONTRACTION = re.compile(r"'(?:ll|re|ve|d|s|m)$")
# Words a noun phrase does not start with: prepositions, conjunctions, adverbs,
# indefinite pronouns ("for game development", "everywhere", "so much", "everything").
_BAD_START = frozenset(
    """for in on at with about of from by into onto over under like as than through
    and or but nor so too very really just also even still again already
    everywhere anywhere somewhere nowhere here there now then
    everything anything something nothing everyone anyone someone everybody anybody
    somebody nobody one ones both either neither none each another other me myself
    much more most less lot lots a-lot""".split()
)
# Verbs a listed item does not start with ("the self-acceptance and love theme").
_VERB_START = frozenset(
    "love loves like likes enjoy enjoys adore hate hates prefer prefers want wish".split()
)
# "I love the colors" is said of something in view; "I love the outdoors" is a taste.
_GENERAL_THE = frozenset(
    """outdoors beach beaches ocean sea mountains water woods forest countryside rain snow
    sun city movies cinema theater theatre gym park parks holidays summer winter fall
    autumn spring night morning mornings quiet""".split()
)
_DEFINITE = re.compile(r"^(?:all\s+(?:of\s+)?)?the\s+(?P<rest>\S+)", re.IGNORECASE)
_PUNCT = re.compile(r"[\[\](){}<>:/|*#@]|\s[-–—]\s|--")


def _bare(word: str) -> str:
    return word.casefold().replace("’", "'")


def opens_clause(text: str) -> bool:
    """Whether ``text`` holds a word that starts another clause or names another person
    ("... being around those who accept"): a verb after it may not be the speaker's."""
    return any(
        (w := _bare(raw)) in _REFERRING or w in _SECOND_PERSON for raw in _WORD.findall(text)
    )


def is_object(phrase: str, items: list[str], *, definite: bool = True) -> bool:
    """Whether ``phrase``, split into ``items`` ("hiking and skiing" -> two), names
    things: no second person, no word that refers back or opens a clause, no finite verb,
    no item starting with a preposition, adverb, pronoun or like-verb. With
    ``definite=False`` an item may not start with "the" unless a name or a general
    setting follows ("the Beatles", "the outdoors")."""
    if not items or _PUNCT.search(phrase):
        return False
    for raw in _WORD.findall(phrase):
        word = _bare(raw)
        if word in _SECOND_PERSON or word in _REFERRING or word in _FINITE:
            return False
        if word.endswith("n't"):
            return False  # "don't", "ain't": a clause
        if _CONTRACTION.search(word) and not word.endswith("'s"):
            return False  # "that'll", "we're", "I'd"
        if word.endswith("'s") and word[:-2] in _REFERRING | _SECOND_PERSON:
            return False  # "it's", "that's", "who's"
    for item in items:
        words = item.split()
        first = _bare(words[0]) if words else ""
        if not first or first in _BAD_START or first in _VERB_START:
            return False
        if not definite and (the := _DEFINITE.match(item)):
            rest = the["rest"]
            if not (rest[:1].isupper() or _bare(rest) in _GENERAL_THE):
                return False
    return True
