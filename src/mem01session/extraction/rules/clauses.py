"""How the rule extractor reads a user message: sentences, then clauses.

A message is split into sentences (a bracketed note such as "[image: a photo of a dog]"
is one of its own); questions are dropped; each sentence is split into clauses where a
new statement of the user's starts (:func:`clauses`); hypotheticals and plans are
dropped. What is left is tidied (:func:`normalize`: interjections, fillers, "now" tails, a
closing remark ("..., sadly") and how long a fact has held off; "I've ..." read as the
tables spell it) for the pattern tables of :mod:`.patterns` and
:mod:`.negations`.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator

from .objects import opens_clause

__all__ = ["clauses", "is_question", "normalize", "sentences", "statements"]

# Sentence ends; a bracketed note ("[image: a photo of a dog]") stands on its own too.
# (Each space run is tried once, from its start: linear on a long one.)
_SENTENCE = re.compile(
    r"(?<!\b(?:Mr|Ms|Dr|St|Jr|Sr|vs)\.)(?<!\bMrs\.)(?<=[.!?])\s+|\n+"
    r"|(?<!\s)\s++(?=\[)|(?<=\])\s+"
)
_QUESTION_START = frozenset(
    """do does did am is are was were can could should would will have has where what
    when who whom whose why how which shall may""".split()
)
_HYPOTHETICAL = re.compile(
    r"(?i)\b(?:if|unless|might|maybe|perhaps|probably|would|could|should|someday|one\s+day"
    r"|hopefully|hope|wish|want|wanna|wants|thinking\s+(?:about|of)|considering|planning"
    r"|plan\s+to|going\s+to|gonna|will|dream|imagine|suppose|pretend|whether|I\s+may"
    r"|soon)\b|\b(?:I|we|you|they)'(?:d|ll)\b"
)
_INTERJECTION = re.compile(
    r"^(?:(?:oh|ah|well|so|also|btw|by\s+the\s+way|actually|anyway|yeah|yes|yep|no|nope"
    r"|ok|okay|fyi|fun\s+fact|just\s+so\s+you\s+know|you\s+know|and|but|plus|hmm|um"
    r"|honestly)\b[,!:]?\s*)+",
    re.IGNORECASE,
)
# "Hi, I'm Sam" introduces a name; "I'm Sam" alone is too ambiguous to read as one.
_GREETING = re.compile(r"^(?:hi|hello|hey)(?:\s+there)?[,!]?\s+(?:I'm|I\s+am|this\s+is)\s+", re.I)
_ADVERBS = (
    r"(?:just|recently|finally|currently|now|still|actually|really|also|absolutely|totally"
    r"|honestly|officially|already|definitely)"
)
_FILLER = re.compile(
    rf"\b(I|we|I'm|I\s+am|we're|I\s+have|we\s+have)\s+(?:{_ADVERBS}\s+)+", re.IGNORECASE
)
# ... and at the start of a clause said without "I" ("Just moved to SF!").
_LEADING = re.compile(rf"^(?:{_ADVERBS}\s+)+", re.IGNORECASE)
# One "now" tail; stripped from the end one at a time, each looked for in the last few
# characters only (a search for a run of them ending the text would retry every start).
# A remark on it closing the clause goes the same way ("I'm allergic to cats, sadly").
_TAIL = re.compile(
    r",?\s+(?:right\s+now|now|these\s+days|at\s+the\s+moment|currently|too|as\s+well"
    r"|sadly|unfortunately|fortunately|luckily|thankfully|though|btw|by\s+the\s+way|lol"
    r"|haha|honestly|actually)$",
    re.IGNORECASE,
)
_TAIL_REACH = 24
_CLAUSE_SPLIT = re.compile(
    r"\s*;\s*|,?\s+(?:and|but|so|plus|though|although|because|'cause|cuz)\s+|,\s+"
)
# What follows ", so" (a consequence) is a clause of its own, whatever its subject: "I'm a
# teacher, so summers are free" states that the user is a teacher. So is a reason
# ("because ..."), read only when the user speaks of themselves in it: "I'm vegan because
# I love animals", but not the rent of "I live with my parents because rent is $2,400".
_THEREFORE = re.compile(r",\s*so\s+", re.IGNORECASE)
_BECAUSE = re.compile(r",?\s*(?:because|'cause|cuz)\s+", re.IGNORECASE)
_SPEAKER_SUBJECT = r"I|I'm|I've|we|we're|my|our"
_FIRST_PERSON = re.compile(rf"^(?:{_SPEAKER_SUBJECT})\b", re.IGNORECASE)
# Rent is a subject of its own too: "I live in NYC, rent is $2,400".
_SUBJECT = re.compile(rf"^(?:{_SPEAKER_SUBJECT}|(?:the\s+)?rent(?:'s)?)\b", re.IGNORECASE)
# A piece that is a clause of its own with another subject, or a subordinate one ("I love
# music, it's my life"; "..., 'cause nature brings peace"): it ends the clause before.
_OTHER_CLAUSE = re.compile(
    r"^(?:it|it's|that's|this|he|she|they|they're|there's|because|'cause|cause|cuz|since"
    r"|which|who|whenever|while)\b",
    re.IGNORECASE,
)
# A clause whose subject is the speaker, and the word after it ("I live ..." -> "live").
_SPEAKER = re.compile(
    r"^(?:I|we)(?:'m|'ve|'re|\s+am|\s+are)?\s+(?:(?:just|recently|really|also|still|now"
    r"|actually|absolutely|totally|honestly|definitely|currently|finally)\s+)*(?P<verb>[\w']+)",
    re.IGNORECASE,
)
_VERB_START = re.compile(
    r"^(?:live|pay|work|moved|relocated|have|love|like|enjoy|prefer|hate|play|got|joined"
    r"|quit|left|started|spend|eat|adopted|went|became|no\s+longer|don't|do\s+not)\b",
    re.IGNORECASE,
)
# A run of spaces or tabs reads as one space (and every pattern below meets short runs).
_SPACES = re.compile(r"[^\S\n]{2,}")
# Verbs that are nouns as often: said twice in one clause ("I love the self-acceptance and
# love theme"), the second is the noun.
_NOUN_TOO = frozenset(("love", "like"))


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text) if s and s.strip()]


def is_question(sentence: str) -> bool:
    first = _INTERJECTION.sub("", sentence).split(maxsplit=1)
    return sentence.rstrip().endswith("?") or (bool(first) and first[0].lower() in _QUESTION_START)


def _speaker_verb(clause: str) -> str | None:
    """The word after the speaker ("I really love X" -> "love"), when the clause is the
    speaker's own statement and nothing in it opens another clause ("I'm happier around
    those who accept ..."); ``None`` for anything else ("Take care", "My rent is ...")."""
    m = _SPEAKER.match(_INTERJECTION.sub("", clause))
    if m is None or opens_clause(_INTERJECTION.sub("", clause)[m.end() :]):
        return None
    return m["verb"].casefold()


def _said_twice(start: str, verb: str) -> bool:
    return start.casefold() == verb and verb in _NOUN_TOO


def clauses(sentence: str) -> list[str]:
    """Split on conjunctions only where a new first-person statement starts.

    A piece with its own first-person subject starts one. So does a piece starting with a
    verb ("I live in NYC and pay $2,400 in rent"), whose subject is then the "I" of the
    clause before: only when that clause is still the speaker's own statement, with no
    other subject or clause in it so far (not "Take care and enjoy your day", "It was a
    chance to learn and work as a team", "I'm happier around those who accept and love
    me"), and the verb is not "love" or "like" said again ("I love the self-acceptance
    and love theme": a noun there, not a second verb).
    """
    body = sentence.strip().rstrip(".!").strip()
    pieces = _CLAUSE_SPLIT.split(body)
    seps = _CLAUSE_SPLIT.findall(body)
    out = [pieces[0]]
    verb = _speaker_verb(pieces[0])
    for sep, piece in zip(seps, pieces[1:], strict=True):
        bare = _INTERJECTION.sub("", piece)
        is_comma = sep.strip() == ","
        start = _VERB_START.match(bare)
        if _BECAUSE.fullmatch(sep) and not _FIRST_PERSON.match(bare):
            # A reason about something else: a clause of its own that, still opening
            # with its "because", states no fact of the user's.
            out.append(f"{sep.strip(', ')} {bare}")
            verb = None
        elif _SUBJECT.match(bare):
            out.append(bare)
            verb = _speaker_verb(bare)
        elif _OTHER_CLAUSE.match(bare) or _THEREFORE.fullmatch(sep):
            out.append(bare)
            verb = None
        elif not is_comma and start and verb is not None and not _said_twice(start[0], verb):
            out.append(f"I {bare}")
            verb = _speaker_verb(out[-1])
        else:
            out[-1] = f"{out[-1]}{sep}{piece}"
            verb = None if verb is None or opens_clause(piece) else verb
    return out


# The present perfect reads as the pattern tables spell a fact. "I've" is "I have"; a
# state that has lasted holds now ("I've been working at X" -> "I am working at X"); a
# change made is said as done ("I've quit smoking" -> "I quit smoking"); "I've got" is
# "I have" unless it is a job got.
_HAVE = re.compile(r"\b(I|we)'ve\b", re.IGNORECASE)
_HAVE_BEEN = re.compile(
    r"\b(?:(I)|we)\s+have\s+been\s+(?=(?:working|living|based|employed|married|engaged"
    r"|vegetarian|vegan|pescatarian|an?)\b)",
    re.IGNORECASE,
)
_JOB_GOT = r"(?:a|an|the)\s+(?:new\s+)?(?:job|position|role|offer)\b"
_HAVE_DONE = re.compile(
    rf"\b(I|we)\s+have\s+(?=(?:quit|left|started|joined|adopted|stopped|got\s+{_JOB_GOT})\b)",
    re.IGNORECASE,
)
_HAVE_GOT = re.compile(rf"\b(I|we)\s+have\s+got\b(?!\s+{_JOB_GOT})", re.IGNORECASE)
# How long a fact has held, at the end ("... for ten years"): not part of the fact.
_LASTED = re.compile(
    r",?\s+for\s+(?:(?:over|almost|nearly|about|around|the\s+past|the\s+last)\s+)?"
    r"(?:(?:\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|a\s+few|a\s+couple"
    r"(?:\s+of)?|several|many)\s+)?(?:years?|months?|weeks?|decades?|ages|a\s+while"
    r"|a\s+long\s+time)$",
    re.IGNORECASE,
)
_LASTED_REACH = 48
# A job held for a while, or since some time, is held now ("I've worked at X for five
# years", "... since 2019"); "I've worked at X" alone may be long past, and stays nothing.
_WORKED = re.compile(r"^(I)\s+have\s+worked\s+(?=(?:at|for)\s)", re.IGNORECASE)
_WORKED_SINCE = re.compile(r"^I\s+have\s+worked\s+(?:at|for)\s.*?\ssince\s+\S", re.IGNORECASE)


def normalize(clause: str) -> str:
    clause = _LEADING.sub("", _INTERJECTION.sub("", clause.strip()))
    clause = _HAVE.sub(r"\1 have", clause)
    clause = _HAVE_BEEN.sub(lambda m: "I am " if m[1] else "we are ", clause)
    clause = _HAVE_GOT.sub(r"\1 have", _HAVE_DONE.sub(r"\1 ", clause))
    clause = _FILLER.sub(lambda m: f"{m[1]} ", clause)
    clause = clause.strip().rstrip(".!,")
    if m := _LASTED.search(clause, max(0, len(clause) - _LASTED_REACH)):
        clause = _WORKED.sub(r"\1 am working ", clause[: m.start()])
    elif _WORKED_SINCE.match(clause):
        clause = _WORKED.sub(r"\1 am working ", clause)
    while m := _TAIL.search(clause, max(0, len(clause) - _TAIL_REACH)):
        clause = clause[: m.start()]
    return clause.strip().rstrip(".!,")


def statements(text: str) -> Iterator[tuple[str, str]]:
    """``(sentence, clause)`` for each clause of ``text`` that may state a fact: not in a
    question, not a hypothetical or a plan. "Hi, I'm Sam" reads as "my name is Sam"."""
    text = unicodedata.normalize("NFKC", text).replace("’", "'").replace("‘", "'")
    text = _SPACES.sub(" ", text)
    for sentence in sentences(text):
        if is_question(sentence):
            continue
        for clause in clauses(_GREETING.sub("my name is ", sentence)):
            if not _HYPOTHETICAL.search(clause):
                yield sentence, clause
