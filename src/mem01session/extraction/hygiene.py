"""Screening of proposed ops before anything is stored: secrets out, text clean.

Every op's ``content``, ``key``, ``evidence`` and ``reason`` go through here, whichever
extractor proposed them. Policy:

* a secret in ``content`` or ``key`` **drops the op**: a fact whose statement is the
  secret ("Password is hunter2") cannot be kept in any useful form;
* a secret in ``evidence`` or ``reason`` is **redacted** (replaced by ``[redacted]``) and
  the op's ``reason`` records it ("evidence redacted: api key"), so the ledger says so;
* text is stripped of NUL and control characters, whitespace is collapsed, and length is
  capped at :data:`~mem01session.ops.MAX_CONTENT_CHARS` (content) and
  :data:`~mem01session.ops.MAX_EVIDENCE_CHARS` (evidence, reason).

Detection is pattern-based (known key formats, password phrases, Luhn-valid card numbers,
mod-97-valid IBANs, bearer/JWT tokens, long high-entropy tokens); ordinary numbers such as
"$2,400", years and short phone-like numbers are not flagged.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace

from ..ops import MAX_CONTENT_CHARS, MAX_EVIDENCE_CHARS, Op
from ..redaction import get_logger

log = get_logger(__name__)

REDACTED = "[redacted]"


@dataclass(frozen=True)
class _Detector:
    label: str
    pattern: re.Pattern[str]
    group: str | int = 0
    check: Callable[[str], bool] | None = None


def _luhn(candidate: str) -> bool:
    digits = [int(c) for c in candidate if c.isdigit()]
    if not 13 <= len(digits) <= 19 or len(set(digits)) == 1:
        return False
    total = 0
    for i, d in enumerate(reversed(digits)):
        if i % 2:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


def _iban(candidate: str) -> bool:
    compact = candidate.replace(" ", "").upper()
    if not 15 <= len(compact) <= 34:
        return False
    rearranged = compact[4:] + compact[:4]
    number = "".join(str(int(c, 36)) for c in rearranged)
    return int(number) % 97 == 1


def _high_entropy(token: str) -> bool:
    if not (any(c.isdigit() for c in token) and any(c.isalpha() for c in token)):
        return False
    if token.isdigit() or "://" in token:
        return False
    pieces = [p for p in re.split(r"[-_/+]", token) if p]
    if len(pieces) >= 3 and all(p.isalpha() or p.isdigit() for p in pieces):
        return False  # a slug, path or date, not a key
    counts = Counter(token)
    entropy = -sum(n / len(token) * math.log2(n / len(token)) for n in counts.values())
    return entropy >= 3.5


_DETECTORS: tuple[_Detector, ...] = (
    _Detector(
        "private key",
        re.compile(
            r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)"
        ),
    ),
    _Detector("api key", re.compile(r"\b(?:sk|rk|pk)-[A-Za-z0-9_\-]{16,}")),
    _Detector("api key", re.compile(r"\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{10,}")),
    _Detector("api key", re.compile(r"\bAIza[0-9A-Za-z_\-]{30,}")),
    _Detector("aws access key", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    _Detector(
        "github token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})")
    ),
    _Detector("slack token", re.compile(r"\bxox[abposre]-[A-Za-z0-9\-]{10,}")),
    _Detector(
        "jwt", re.compile(r"\beyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}")
    ),
    _Detector("bearer token", re.compile(r"(?i:\bbearer\s+)(?P<v>[A-Za-z0-9._~+/\-]{12,}=*)"), "v"),
    _Detector(
        "url password", re.compile(r"[a-zA-Z][a-zA-Z0-9+.\-]*://[^:/@\s]+:(?P<v>[^@\s]+)@"), "v"
    ),
    _Detector(
        "password",
        re.compile(
            r"(?i:\b(?:password|passwd|passcode|passphrase|pass\s?word|pwd|pw|pin(?:\s?code)?"
            r"|api[\s_\-]?key|(?:api|access|auth|refresh|bearer)[\s_\-]?token"
            r"|client[\s_\-]?secret|secret[\s_\-]?key)\b"
            r"(?:\s+(?:for|to|of|on|at)\s+[\w.\-]+(?:\s+[\w.\-]+)?)?"
            r"(?:\s+(?:is|was|=|:)|\s*[:=]))\s*(?P<v>[\"'`]?[^\s\"'`,;]{3,}[\"'`]?)"
        ),
        "v",
    ),
    # Bare "secret"/"token"/"key" only in the unmistakable ``name: value`` form.
    _Detector(
        "secret",
        re.compile(r"(?i:\b(?:secret|token|key)\s*[:=])\s*(?P<v>[^\s\"'`,;]{6,})"),
        "v",
    ),
    _Detector(
        "card number", re.compile(r"(?<![\d\-])(?:\d[ \-]?){12,18}\d(?![\d\-])"), check=_luhn
    ),
    _Detector(
        "iban",
        re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,4})?\b"),
        check=_iban,
    ),
    _Detector("ssn", re.compile(r"(?<![\d\-])\d{3}-\d{2}-\d{4}(?![\d\-])")),
    _Detector(
        "token", re.compile(r"(?<![\w/])[A-Za-z0-9_\-+/]{24,}={0,2}(?![\w/])"), check=_high_entropy
    ),
)

# Values after "password is" that are ordinary words, not the secret itself.
_NOT_A_SECRET = frozenset(
    "a an the my your our their his her its same different new old too very really "
    "not never always expired wrong correct saved stored long short required".split()
)


@dataclass(frozen=True)
class SecretMatch:
    """One detected secret: its kind and where it sits in the text."""

    label: str
    start: int
    end: int


def find_secrets(text: str) -> list[SecretMatch]:
    """Every non-overlapping secret in ``text``, leftmost first."""
    found: list[SecretMatch] = []
    for det in _DETECTORS:
        for m in det.pattern.finditer(text):
            value = m.group(det.group)
            if not value:
                continue
            if det.label == "password" and value.strip("\"'`").casefold() in _NOT_A_SECRET:
                continue
            if det.check is not None and not det.check(value):
                continue
            start, end = m.span(det.group)
            if any(start < f.end and f.start < end for f in found):
                continue
            found.append(SecretMatch(det.label, start, end))
    return sorted(found, key=lambda f: f.start)


def contains_secret(text: str | None) -> bool:
    """Whether ``text`` holds anything that looks like a secret."""
    return bool(text) and bool(find_secrets(text or ""))


def redact_secrets(text: str) -> tuple[str, list[str]]:
    """``text`` with every secret replaced by ``[redacted]``, and the kinds found."""
    matches = find_secrets(text)
    for m in reversed(matches):
        text = text[: m.start] + REDACTED + text[m.end :]
    return text, _unique(m.label for m in matches)


_SPACE = re.compile(r"\s+")


def clean_text(text: str, limit: int | None = None) -> str:
    """Control characters removed, whitespace collapsed, trimmed, capped at ``limit``."""
    kept = []
    for ch in text:
        if ch in "\t\n\r\v\f":
            kept.append(" ")
        elif unicodedata.category(ch) not in ("Cc", "Cs"):
            kept.append(ch)
    collapsed = _SPACE.sub(" ", "".join(kept)).strip()
    if limit is not None and len(collapsed) > limit:
        collapsed = collapsed[: limit - 1].rstrip() + "…"
    return collapsed


@dataclass(frozen=True)
class Screened:
    """The ops that may be stored, and a note for each one dropped."""

    ops: tuple[Op, ...]
    notes: tuple[str, ...] = ()


def screen(ops: Sequence[Op]) -> Screened:
    """Screen a batch: drop ops whose statement is a secret, redact the rest, clean text."""
    kept: list[Op] = []
    notes: list[str] = []
    for index, op in enumerate(ops):
        content = clean_text(op.content, MAX_CONTENT_CHARS) if op.content is not None else None
        key = clean_text(op.key, 200) if op.key is not None else None
        statement_secrets = find_secrets(content or "") + find_secrets(key or "")
        if statement_secrets:
            labels = ", ".join(_unique(m.label for m in statement_secrets))
            notes.append(f"op #{index} ({op.op}) dropped: its content held a secret ({labels})")
            log.warning("extraction: dropped an op whose content held a secret (%s)", labels)
            continue
        remarks: list[str] = []
        evidence = op.evidence
        if evidence is not None:
            evidence, labels_found = redact_secrets(clean_text(evidence))
            evidence = clean_text(evidence, MAX_EVIDENCE_CHARS) or None
            if labels_found:
                remarks.append(f"evidence redacted: {', '.join(labels_found)}")
        reason = op.reason
        if reason is not None:
            reason, labels_found = redact_secrets(clean_text(reason))
            if labels_found:
                remarks.append(f"reason redacted: {', '.join(labels_found)}")
        if remarks:
            reason = "; ".join([r for r in [reason] if r] + remarks)
            notes.append(f"op #{index} ({op.op}): {'; '.join(remarks)}")
        if reason is not None:
            reason = clean_text(reason, MAX_EVIDENCE_CHARS) or None
        kept.append(replace(op, content=content, key=key, evidence=evidence, reason=reason))
    return Screened(tuple(kept), tuple(notes))


def screen_ops(ops: Sequence[Op]) -> list[Op]:
    """The ops of :func:`screen`, for callers that do not need the notes."""
    return list(screen(ops).ops)


def _unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))
