"""Small talk: passages that carry no fact about the user ("Thanks, that's all for today.",
"Go for it, Jon! You got this!", "Wow! What got you into running?").

Much of what people say in a chat is greetings, thanks, praise of the other speaker and
questions back. Such a passage is kept as an episode like any other (the record is
verbatim), but recall ranks it down (:data:`~.scoring.SMALL_TALK_FACTOR`), so that it
does not take a block's places that passages telling something need. It stays a candidate:
left out of the candidates, the questions back that a fact answered ("Wow! Did you see that
band?") were lost, and real dialogue's evidence in the block fell (tried with
``python -m bench e2e``).

A passage is small talk when none of its sentences states anything: each is a question,
or opens (after a name being addressed) with words of reaction, greeting, thanks or
address to the other speaker ("Wow!", "Thanks, Mel!", "That sounds great", "You're doing
something amazing", "Glad you had fun"). One sentence that states something ("I painted
it last week.", "Lisbon.") makes it no small talk, and so does answering a question: "Yes!"
after "Do you still live in Paris?" says where the user lives. English only: a passage in
another language is never small talk here. How many turns of real dialogue it finds, and
how many of those carry a fact LoCoMo's annotators drew from it: ``python -m bench e2e``.
"""

from __future__ import annotations

import re
from functools import lru_cache

_SENTENCE = re.compile(r"[^.!?]+[.!?]*")
_WORD = re.compile(r"[A-Za-z']+")
# A name addressed at the start of a sentence: "Caroline, ...", "Mel! ..." (its first word).
_ADDRESSED = re.compile(r"^[A-Z][a-z]+,\s*")
_REACTION = re.compile(
    r"^(?:hey|hi|hello|hiya|(?:good )?(?:morning|evening|afternoon)|hmm+"
    r"|thanks(?! to\b)|thank you|thx|missed you|wow|whoa|aw+|ah+|oh+|ooh|cool|awesome|great"
    r"|nice|lovely|amazing|congrats|congratulations|glad|good luck|take care|bye|goodbye"
    r"|see you|see ya|talk (?:to you )?soon|later|yay|ha(?:ha)+|lol|omg|yep|yup|yeah|yes|nope"
    r"|no|nah|sure|ok|okay|right|totally|absolutely|definitely|exactly|indeed|agreed|same"
    r"|me too|you|you're|youre|your|you've|you'll|you'd|that's|thats|that sounds|sounds"
    r"|that is|that was|what a|how|so (?:cool|great|nice|sweet|happy|glad)"
    r"|love (?:that|it|the|your)|good (?:for you|job|idea|point|night)|well done|bet|keep"
    r"|don't|dont|let's|lets|go for it|no (?:problem|worries)|of course|my pleasure|cheers"
    r"|anytime|all the best|have a (?:good|great|nice))\b",
    re.IGNORECASE,
)


@lru_cache(maxsize=1 << 14)
def is_small_talk(text: str, before: str | None = None) -> bool:
    """Whether ``text`` (one passage of the user's) states nothing, ``before`` being what
    it answered (the assistant's message before it, if known): see the module docstring."""
    if not _WORD.search(text) or (before and _asks(before)):
        return False
    for sentence in _sentences(text):
        if sentence.endswith("?"):
            continue
        if not _REACTION.match(_ADDRESSED.sub("", sentence)):
            return False
    return True


def _sentences(text: str) -> list[str]:
    found = (s.strip().strip("\"'“”").strip() for s in _SENTENCE.findall(text.replace("’", "'")))
    return [s for s in found if s]


def _asks(before: str) -> bool:
    """Whether ``before`` ends on a question (what follows it answers it)."""
    said = _sentences(before)
    return bool(said) and said[-1].endswith("?")


def forget() -> None:
    """Drop the remembered passages (user words: after an erase nothing of them stays)."""
    is_small_talk.cache_clear()
