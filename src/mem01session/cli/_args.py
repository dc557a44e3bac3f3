"""Checks of command-line arguments: each bad value is a one-line error and exit code 1."""

from __future__ import annotations

from ._errors import fail


def parse_id(value: str, what: str = "belief") -> int:
    """A positive integer id from the command line, or a clean error."""
    text = value.strip().lstrip("#")
    if not text.isascii() or not text.isdigit() or int(text) < 1 or int(text) > 2**63 - 1:
        fail(f"{what} id must be a positive integer, got {value!r}")
    return int(text)


def check_positive(name: str, value: int) -> None:
    """Refuse a non-positive numeric option with a one-line message."""
    if value <= 0:
        fail(f"{name} must be a positive integer, got {value}")
