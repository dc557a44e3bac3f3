"""Conversions between libpq URLs and SQLAlchemy URLs."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

from ..config import DATABASE_SCHEME as _SCHEME
from ..config import libpq_url as libpq_url

CONNECT_TIMEOUT_SECONDS = 10
"""How long one connection attempt may wait for the server when the URL names no
``connect_timeout``. Without it, a server that accepts connections but never answers (or
a host that drops them) held the opening of the memory, which a process's first run waits
for, for psycopg's default of 130 s per attempt."""


def with_connect_timeout(url: str) -> str:
    """``url`` with ``connect_timeout`` (:data:`CONNECT_TIMEOUT_SECONDS`) when it names
    none; a URL that does is returned unchanged."""
    if not _SCHEME.match(url) or "#" in url:
        return url
    query = urlsplit(url).query
    if "connect_timeout" in parse_qs(query, keep_blank_values=True):
        return url
    return f"{url}{'&' if query else '?'}connect_timeout={CONNECT_TIMEOUT_SECONDS}"


def sqlalchemy_url(url: str) -> str:
    """``postgresql://...`` (any driver suffix) -> ``postgresql+psycopg://...``."""
    return _SCHEME.sub("postgresql+psycopg://", url, count=1)
