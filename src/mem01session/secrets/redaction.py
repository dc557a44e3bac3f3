"""Keep secrets out of reprs, logs and exception messages.

Secrets are registered once (by :class:`~mem01session.config.Settings` when it reads
the environment) and every outgoing message is scrubbed of them. DSN passwords are
also removed structurally, so a URL never shows its password even if it was never
registered.

Linear time: each pattern starts with a literal (``://``, ``password``, ``sk-``) that
``re`` finds with a fast substring search, and every repetition after it either stops
at a character the next step needs, is possessive, or is bounded, so no start position
makes the engine scan the rest of the text again.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import unquote

from .._forks import ForkSafeLock

MASK = "***"

_lock = ForkSafeLock()
_secrets: set[str] = set()
_ordered: tuple[str, ...] = ()  # longest first, so a secret that holds another goes whole

# scheme://user:password@host -> scheme://user:***@host. The password runs to the last
# "@" before the first "/" or whitespace (how urllib reads it; it covers a password with
# an unescaped "@"), or, when it holds a "/", to the first "@" before the next "://".
# Every part stops at the next "://" at the latest, so the scans from two "://" never
# overlap.
URL_PASSWORD = re.compile(
    r"://(?<=[A-Za-z0-9+.\-]://)[^:/@\s]*+:"
    r"(?P<pw>[^/\s]*(?=@)|(?:[^@\s:]++|:(?!//))*+(?=@))"
)
# password=secret in libpq key/value DSNs and query strings (matched on lower-cased
# text). A quoted value goes whole; an unquoted one stops before a closing quote.
_KV_PASSWORD = re.compile(
    r"(?<!\w)(?:ssl)?password\s*+=\s*+(?P<pw>'[^']*+'|\"[^\"]*+\"|['\"]?[^\s&;'\"]++)"
)
# bearer tokens and OpenAI-style keys that were never registered
_API_KEY = re.compile(r"sk-(?<!\wsk-)[A-Za-z0-9_\-]{8,}")


def register_secret(value: str | None) -> None:
    """Remember ``value`` so that :func:`redact` masks it everywhere from now on."""
    global _ordered
    if value and len(value) >= 4:
        with _lock:
            if value not in _secrets:
                _secrets.add(value)
                _ordered = tuple(sorted(_secrets, key=len, reverse=True))


def lowered(text: str) -> str:
    """``text`` lower-cased, with the same length (so spans found in it fit ``text``)."""
    low = text.lower()
    if len(low) != len(text):  # only U+0130 lower-cases to two characters
        low = text.replace("\u0130", "i").lower()
    return low


def replace_spans(text: str, spans: Iterable[tuple[int, int]], mask: str) -> str:
    """``text`` with each of the sorted, non-overlapping ``spans`` replaced by ``mask``."""
    pieces: list[str] = []
    last = 0
    for start, end in spans:
        pieces += (text[last:start], mask)
        last = end
    if not pieces:
        return text
    pieces.append(text[last:])
    return "".join(pieces)


def redact(text: str) -> str:
    """Return ``text`` with registered secrets, URL passwords and API keys masked."""
    if not text:
        return text
    for secret in _ordered:
        if secret in text:
            text = text.replace(secret, MASK)
    text = replace_spans(text, (m.span("pw") for m in URL_PASSWORD.finditer(text)), MASK)
    kv = [m.span("pw") for m in _KV_PASSWORD.finditer(lowered(text))]
    text = replace_spans(text, kv, MASK)
    return _API_KEY.sub(MASK, text)


def redact_dsn(dsn: str) -> str:
    """A DSN safe to show: same shape, password masked."""
    return redact(dsn)


def dsn_secrets(dsn: str) -> set[str]:
    """Every string of ``dsn`` that may be its password, to register as secrets.

    A password with an unescaped ``@`` is read differently by each parser: libpq takes
    the text up to the first ``@`` and the rest as part of the host (and says so in its
    errors: ``failed to resolve host 'Passw0rd@127.0.0.1'``), urllib takes it up to the
    last ``@``. One with an unescaped ``/`` is no password to either (libpq reads the
    part before the ``/`` as a port, and quotes it). Every reading is returned, decoded
    and not, with every run of its pieces between ``@``, ``/``, ``?`` and ``#``, so any
    fragment an error message can quote is masked.
    """
    found: set[str] = set()
    _, sep, rest = dsn.partition("://")
    if sep:
        netloc = re.split(r"[/?#]", rest, maxsplit=1)[0]  # urllib's authority
        before_slash = rest.split("/", 1)[0]  # libpq looks for "@" up to the first "/"
        userinfos = {netloc.rpartition("@")[0], before_slash.partition("@")[0]}
        if "@" not in before_slash:  # the user meant a password that holds a "/"
            userinfos.add(rest.partition("@")[0])
        for userinfo in userinfos:
            _, colon, password = userinfo.partition(":")
            if colon:
                found.add(password)
    for part in rest.replace("?", "&").split("&") if sep else dsn.split():
        key, _, value = part.partition("=")
        if key.strip().lower() in ("password", "sslpassword"):  # libpq's two
            found.add(value.strip("'\""))
    readings = found | {unquote(p) for p in found}
    return {run for p in readings for run in _runs(p)} - {""}


_SEPARATOR = re.compile(r"[@/?#]")


def _runs(password: str) -> set[str]:
    """``password`` and every run of up to 8 of its pieces between separators."""
    bounds = [-1, *(m.start() for m in _SEPARATOR.finditer(password)), len(password)]
    runs = {password}
    for i in range(len(bounds) - 1):
        for j in range(i + 1, min(len(bounds), i + 9)):
            runs.add(password[bounds[i] + 1 : bounds[j]])
    return runs
