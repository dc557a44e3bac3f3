"""Cutting what was said into what an episode holds: a message into passages short enough
for recall to quote the part that answers (:func:`passages`), and the message it answered
into its end, kept as the episode's context (:func:`tail`)."""

from __future__ import annotations

import re

from ..tokens import TokenCounter

CONTEXT_TOKENS = 48
"""The most tokens of an episode's context kept: the end of the message it answered, whole
sentences where they fit (a question closes what it asks)."""
PASSAGE_TOKENS = 32
"""The most tokens one passage holds: a longer message is split at sentence ends (and a
longer sentence at spaces), so that recall can quote the part that answers."""
MAX_PASSAGES = 64
"""The most passages kept of one message, its first and last half of them (a pasted
document is not what episodes are for, the words said before or after it are; the job's
text is capped already)."""


# A sentence ends at . ! ? … and a space, or at 。！？ (Chinese and Japanese, without one).
_SENTENCE_END = re.compile(r"(?<=[.!?…])\s+|(?<=[。！？])\s*|\n+")
_CJK_END = ("。", "！", "？")
SPACE = re.compile(r"\s+")


def sentences(body: str) -> list[str]:
    """``body``'s sentences, whitespace collapsed, empty ones left out."""
    return [s for raw in _SENTENCE_END.split(body) if (s := SPACE.sub(" ", raw).strip())]


def passages(body: str, counter: TokenCounter, limit: int = PASSAGE_TOKENS) -> list[str]:
    """``body`` cut into passages of at most ``limit`` tokens: whole sentences where they
    fit, a sentence longer than ``limit`` cut at spaces (a run without spaces at ``limit``
    tokens' worth of characters). Whitespace is collapsed; nothing is lost but it."""
    out: list[str] = []
    current: list[str] = []
    used = 0
    for sentence in sentences(body):
        cost = counter.count(sentence)
        if cost > limit:
            if current:
                out.append(_joined(current))
                current, used = [], 0
            out += _cut(sentence, counter, limit)
            continue
        if current and used + 1 + cost > limit:
            out.append(_joined(current))
            current, used = [], 0
        current.append(sentence)
        used += cost + (1 if used else 0)
    if current:
        out.append(_joined(current))
    if len(out) > MAX_PASSAGES:
        out = out[: MAX_PASSAGES // 2] + out[-(MAX_PASSAGES // 2) :]
    return out


def _joined(sentences: list[str]) -> str:
    """Sentences as written: a space after . ! ?, none after 。！？."""
    text = sentences[0]
    for sentence in sentences[1:]:
        text += sentence if text.endswith(_CJK_END) else " " + sentence
    return text


def _cut(sentence: str, counter: TokenCounter, limit: int) -> list[str]:
    """A sentence longer than ``limit`` tokens, cut at spaces into pieces that fit."""
    out: list[str] = []
    piece = ""
    for word in sentence.split(" "):
        while counter.count(word) > limit:  # no space to cut at: cut the characters
            head = _fitting_prefix(word, counter, limit)
            if piece:
                out.append(piece)
                piece = ""
            out.append(head)
            word = word[len(head) :]
        candidate = f"{piece} {word}" if piece else word
        if piece and counter.count(candidate) > limit:
            out.append(piece)
            piece = word
        else:
            piece = candidate
    if piece:
        out.append(piece)
    return out


def _fitting_prefix(word: str, counter: TokenCounter, limit: int) -> str:
    """The longest start of ``word`` (one character at least) that fits ``limit`` tokens."""
    n = len(word)
    while n > 1:
        cost = counter.count(word[:n])
        if cost <= limit:
            break
        n = max(1, min(n - 1, n * limit // cost))
    return word[:n]


def tail(body: str, counter: TokenCounter, limit: int = CONTEXT_TOKENS) -> str:
    """The end of ``body`` in at most ``limit`` tokens: its last whole sentences that fit,
    else the end of its last sentence, cut at a space."""
    kept: list[str] = []
    used = 0
    for sentence in reversed(sentences(body)):
        cost = counter.count(sentence)
        if used + (1 if used else 0) + cost > limit:
            if not kept:  # the last sentence alone is too long: its end
                kept.append(_end_of(sentence, counter, limit))
            break
        kept.insert(0, sentence)
        used += cost + (1 if used else 0)
    return _joined(kept) if kept else ""


def _end_of(sentence: str, counter: TokenCounter, limit: int) -> str:
    """The last words of ``sentence`` that fit ``limit`` tokens (of one longer word, its
    last characters that do)."""
    words = sentence.split(" ")
    end = words.pop()
    n = len(end)
    while n > 1 and (cost := counter.count(end[-n:])) > limit:
        n = max(1, min(n - 1, n * limit // cost))
    if n < len(end):
        return end[-n:]
    while words and counter.count(f"{words[-1]} {end}") <= limit:
        end = f"{words.pop()} {end}"
    return end
