"""Secrets in what users say: API keys, tokens, passwords, card numbers, IBANs.

Pattern-based (known key formats, password phrases, Luhn-valid card numbers,
mod-97-valid IBANs, bearer/JWT tokens, long high-entropy tokens); ordinary numbers such
as "$2,400", years and short phone-like numbers are not flagged. Used twice: job
payloads are scrubbed before they are stored, and extracted ops are screened before they
are applied.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass

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
    return text, unique(m.label for m in matches)


def unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))
