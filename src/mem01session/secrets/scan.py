"""Secrets in what users say: API keys, tokens, passwords, card numbers, IBANs.

Pattern-based (known key formats, password phrases, Luhn-valid card numbers,
mod-97-valid IBANs, bearer/JWT tokens, long high-entropy tokens); ordinary numbers such
as "$2,400", years and short phone-like numbers are not flagged. Used twice: job
payloads are scrubbed before they are stored, and extracted ops are screened before they
are applied.

Linear time, whatever the text (a pasted megabyte of hex, ``"a:" * N``):

* every pattern starts with a literal (``sk-``, ``eyJ``, ``://``, ``password``), so ``re``
  skips to candidates with a fast substring search, and every repetition after it stops
  at a character the next step needs, is possessive or is bounded, so no start position
  rescans the rest of the text;
* keyword patterns run on a lower-cased copy of the same length;
* long runs of token characters (keys, hex and base64 blobs) are found with
  ``bytes.find`` on a byte map of the text; card numbers, SSNs and IBANs are tried only
  at anchors (a long run of digits, spaces and dashes; two capitals and two digits)
  found on another byte map, outside runs already known to be secrets;
* overlapping finds merge into one span named after the most specific kind.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from .redaction import MASK, lowered, redact, replace_spans
from .rules import (
    CARD,
    CARD_DETAILS,
    DETECTORS,
    DIGIT_ANCHOR,
    DIGIT_MAP,
    IBAN,
    LABELS,
    MAPPED_DIGIT_ANCHOR,
    SSN,
    Detector,
    high_entropy,
    luhn,
)

REDACTED = "[redacted]"

_RANK = {label: rank for rank, label in enumerate(LABELS)}
_MIN_TOKEN = 24
# Token characters become b"a", everything else (any non-Latin-1 character included,
# encoded as "?") a space.
_TOKEN_CHARS = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-+/")
_RUN_MAP = bytes(ord("a") if b in _TOKEN_CHARS else ord(" ") for b in range(256))
_RUN_END = re.compile(b"a*+")
# The digit and capital patterns still look this far into a known blob from each end,
# so a card number or IBAN that touches a blob is found whole.
_BLOB_MARGIN = 64
_MAX_ROUNDS = 4


@dataclass(frozen=True)
class SecretMatch:
    """One detected secret: its kind and where it sits in the text."""

    label: str
    start: int
    end: int


def _token_spans(text: str, latin: bytes) -> Iterator[tuple[int, int]]:
    """High-entropy runs of at least 24 token characters (and up to two ``=``)."""
    mapped = latin.translate(_RUN_MAP)
    needle = b"a" * _MIN_TOKEN
    pos = 0
    while (start := mapped.find(needle, pos)) >= 0:
        run = _RUN_END.match(mapped, start)
        end = pos = run.end() if run else start + _MIN_TOKEN  # it always matches
        while end < len(text) and end - pos < 2 and text[end] == "=":
            end += 1
        if high_entropy(text[start:end]):
            yield start, end
        elif (inner := _unglued(text, start, end)) and high_entropy(text[inner[0] : inner[1]]):
            yield inner


def _unglued(text: str, start: int, end: int) -> tuple[int, int] | None:
    """For a run glued to a letter of another script ("é0123-abcd...-ef"), the part
    after its first and before its last "-" or "+" on the glued sides, if still 24
    characters long (where the previous scan would have started and ended it)."""
    glued_before = start > 0 and text[start - 1].isalnum()
    glued_after = end < len(text) and text[end].isalnum()
    if not (glued_before or glued_after):
        return None
    if glued_before:
        cuts = [i for i in (text.find("-", start, end), text.find("+", start, end)) if i >= 0]
        start = min(cuts, default=end) + 1
    if glued_after:
        end = max(text.rfind("-", start, end), text.rfind("+", start, end))
    return (start, end) if end - start >= _MIN_TOKEN else None


def _ranges(length: int, blobs: list[tuple[int, int]]) -> Iterator[tuple[int, int]]:
    """``[0, length)`` without the inside of each blob (kept: a margin at each end)."""
    pos = 0
    for start, end in blobs:
        if end - start > 2 * _BLOB_MARGIN:
            yield pos, start + _BLOB_MARGIN
            pos = end - _BLOB_MARGIN
    yield pos, length


def _found(
    det: Detector, text: str, subject: str, ascii_text: bool, lo: int, hi: int
) -> Iterator[tuple[int, int, int]]:
    """``det``'s finds in ``subject[lo:hi]`` as ``(start, end, rank)``, values checked."""
    if ascii_text and det.unicode_only:
        return
    pattern = det.ascii if ascii_text else det.unicode
    rank = _RANK[det.label]
    for m in pattern.finditer(subject, lo, hi):
        start, end = m.span(det.group)
        if (
            start < end
            and (det.check is None or det.check(text[start:end]))
            and (det.guard is None or det.guard(text, m))
        ):
            yield start, end, rank


def _digit_family(
    text: str, latin: bytes, ascii_text: bool, blobs: list[tuple[int, int]]
) -> Iterator[tuple[int, int, int]]:
    """Card numbers, SSNs and IBANs, tried only at the anchors (outside blobs)."""
    iban = IBAN.ascii if ascii_text else IBAN.unicode
    if ascii_text:  # the same anchors, found on a byte map
        anchor: re.Pattern[Any] = MAPPED_DIGIT_ANCHOR
        subject: str | bytes = latin.translate(DIGIT_MAP)
    else:
        anchor, subject = DIGIT_ANCHOR, text
    for lo, hi in _ranges(len(text), blobs):
        for a in anchor.finditer(subject, lo, hi):
            start, end = a.span()
            m = iban.match(text, start - 2) if start >= 2 else None
            if m and IBAN.check is not None and IBAN.check(m.group()):
                yield m.start(), m.end(), _RANK[IBAN.label]
            if end - start > 10:
                yield from _cards(text, ascii_text, start, end)
                yield from _found(SSN, text, text, ascii_text, start, end)


_GROUP_BREAK = re.compile(r"[ \-]+")


def _cards(text: str, ascii_text: bool, lo: int, hi: int) -> Iterator[tuple[int, int, int]]:
    """Card numbers in the digit run ``text[lo:hi]``. A match that fails the Luhn check
    may hold the card with a number next to it ("4111 1111 1111 1111 12/27"): its
    prefixes and suffixes at group boundaries are tried too (up to 7 groups)."""
    pattern = CARD.ascii if ascii_text else CARD.unicode
    rank = _RANK[CARD.label]
    for m in pattern.finditer(text, lo, hi):
        start, end = m.span()
        if luhn(text[start:end]):
            yield start, _with_details(text, end), rank
            continue
        if end - start > 19 + 6:  # more than 7 groups: single separators, 19 digits at most
            continue
        breaks = list(_GROUP_BREAK.finditer(text, start, end))
        if not breaks:
            continue
        ends = [b.start() for b in reversed(breaks)]
        starts = [b.end() for b in breaks]
        for cut_start, cut_end in [(start, e) for e in ends] + [(s, end) for s in starts]:
            if luhn(text[cut_start:cut_end]):
                yield cut_start, _with_details(text, cut_end), rank
                break


def _with_details(text: str, end: int) -> int:
    """Where a card number ending at ``end`` ends with the expiry and security code said
    right after it (bounded: at most a few dozen characters are read)."""
    details = CARD_DETAILS.match(text, end, min(len(text), end + 80))
    return details.end() if details else end


def _matches(text: str) -> Iterator[tuple[int, int, int]]:
    """Every find as ``(start, end, rank)``, overlapping and in no particular order."""
    ascii_text = text.isascii()
    low = lowered(text)
    # One byte per character: anything past Latin-1 (or a lone surrogate) becomes "?".
    latin = text.encode("latin-1", "replace")
    blobs = list(_token_spans(text, latin))
    token_rank = _RANK["token"]
    for start, end in blobs:
        yield start, end, token_rank
    for det in DETECTORS:
        yield from _found(det, text, low if det.folded else text, ascii_text, 0, len(text))
    yield from _digit_family(text, latin, ascii_text, blobs)


def find_secrets(text: str) -> list[SecretMatch]:
    """Every secret in ``text``, leftmost first; overlapping finds merge into one."""
    if not text:
        return []
    found: list[SecretMatch] = []
    cur_start = cur_end = cur_rank = -1
    for start, end, rank in sorted(_matches(text)):
        if start < cur_end:
            cur_end = max(cur_end, end)
            cur_rank = min(cur_rank, rank)
            continue
        if cur_end >= 0:
            found.append(SecretMatch(LABELS[cur_rank], cur_start, cur_end))
        cur_start, cur_end, cur_rank = start, end, rank
    if cur_end >= 0:
        found.append(SecretMatch(LABELS[cur_rank], cur_start, cur_end))
    return found


def contains_secret(text: str | None) -> bool:
    """Whether ``text`` holds anything that looks like a secret."""
    return bool(text) and bool(find_secrets(text or ""))


def redact_secrets(text: str) -> tuple[str, list[str]]:
    """``text`` with every secret replaced by ``[redacted]``, and the kinds found.

    Idempotent: a replacement can expose what was glued to the secret
    (``123-45-6789sk-...`` is an SSN, then a key), so a text with secrets is scanned
    again, with :func:`~mem01session.secrets.redaction.redact`'s masks, until a round changes
    nothing (at most four rounds; a text without secrets is scanned once).
    """
    labels: list[str] = []
    for round_ in range(_MAX_ROUNDS):
        before = text
        if round_:
            text = redact(text)
        matches = find_secrets(text)
        labels += (m.label for m in matches if not round_ or _news(text[m.start : m.end]))
        text = replace_spans(text, ((m.start, m.end) for m in matches), REDACTED)
        if text == before:
            break
    return text, unique(labels)


def _news(found: str) -> bool:
    """Whether a find of a later round holds more than earlier masks."""
    return bool(found.replace(REDACTED, "").replace(MASK, "").strip())


def unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))
