"""Conversions between libpq URLs and SQLAlchemy URLs."""

from __future__ import annotations

import re

_SCHEME = re.compile(r"^(postgres|postgresql)(\+[a-z0-9_]+)?://", re.IGNORECASE)


def sqlalchemy_url(url: str) -> str:
    """``postgresql://...`` (any driver suffix) -> ``postgresql+psycopg://...``."""
    return _SCHEME.sub("postgresql+psycopg://", url, count=1)


def libpq_url(url: str) -> str:
    """``postgresql+psycopg://...`` -> ``postgresql://...`` for psycopg.connect."""
    return _SCHEME.sub("postgresql://", url, count=1)
