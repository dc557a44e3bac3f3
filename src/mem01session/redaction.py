"""Keep secrets out of reprs, logs and exception messages.

Secrets are registered once (by :class:`~mem01session.config.Settings` when it reads
the environment) and every outgoing message is scrubbed of them. DSN passwords are
also removed structurally, so a URL never shows its password even if it was never
registered.
"""

from __future__ import annotations

import re
import threading

MASK = "***"

_lock = threading.Lock()
_secrets: set[str] = set()

# scheme://user:password@host  ->  scheme://user:***@host
_URL_PASSWORD = re.compile(
    r"(?P<head>[a-zA-Z][a-zA-Z0-9+.\-]*://[^:/@\s]*:)(?P<pw>[^@\s]*)(?P<at>@)"
)
# password=secret in libpq key/value DSNs and query strings
_KV_PASSWORD = re.compile(r"(?P<head>\bpassword\s*=\s*)(?P<pw>'[^']*'|[^\s&;]+)", re.IGNORECASE)
# bearer tokens and OpenAI-style keys that were never registered
_API_KEY = re.compile(r"\bsk-[A-Za-z0-9_\-]{8,}")


def register_secret(value: str | None) -> None:
    """Remember ``value`` so that :func:`redact` masks it everywhere from now on."""
    if value and len(value) >= 4:
        with _lock:
            _secrets.add(value)


def redact(text: str) -> str:
    """Return ``text`` with registered secrets, URL passwords and API keys masked."""
    if not text:
        return text
    with _lock:
        secrets = sorted(_secrets, key=len, reverse=True)
    for secret in secrets:
        if secret in text:
            text = text.replace(secret, MASK)
    text = _URL_PASSWORD.sub(lambda m: f"{m['head']}{MASK if m['pw'] else ''}{m['at']}", text)
    text = _KV_PASSWORD.sub(lambda m: f"{m['head']}{MASK}", text)
    return _API_KEY.sub(MASK, text)


def redact_dsn(dsn: str) -> str:
    """A DSN safe to show: same shape, password masked."""
    return redact(dsn)
