"""The library's loggers: every record is scrubbed of secrets before a handler sees it."""

from __future__ import annotations

import logging

from ._forks import ForkSafeLock
from .secrets.redaction import redact

_noticed: set[str] = set()
_noticed_lock = ForkSafeLock()


class RedactingFilter(logging.Filter):
    """Scrubs secrets from the formatted message and drops the arguments."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        cleaned = redact(message)
        if cleaned != message or record.args:
            record.msg = cleaned
            record.args = None
        return True


def get_logger(name: str) -> logging.Logger:
    """A library logger whose records are scrubbed before any handler sees them."""
    logger = logging.getLogger(name)
    if not any(isinstance(f, RedactingFilter) for f in logger.filters):
        logger.addFilter(RedactingFilter())
    return logger


def describe(exc: BaseException) -> str:
    """A one-line, secret-free account of ``exc`` for logs and error messages.

    A wrapped driver error is described by the driver's own first line: SQLAlchemy's text
    would add the statement and its parameters, which hold what users said.
    """
    orig = getattr(exc, "orig", None)
    cause = orig if isinstance(orig, BaseException) else exc
    lines = str(cause).strip().splitlines()
    return redact(f"{type(cause).__name__}: {lines[0] if lines else ''}".rstrip(": "))


def notice_once(logger: logging.Logger, kind: str, level: int, message: str, *args: object) -> bool:
    """Log ``message`` the first time this process sees ``kind``; True if it was logged.

    For choices the user should hear of once (an offline fallback, a missing tokenizer),
    however many engines, sessions or commands make them.
    """
    with _noticed_lock:
        if kind in _noticed:
            return False
        _noticed.add(kind)
    logger.log(level, message, *args)
    return True


def forget_notices() -> None:
    """Let every notice be logged again (tests that check them start from here)."""
    with _noticed_lock:
        _noticed.clear()
