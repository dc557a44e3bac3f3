"""How one session meets a failure of its durable memory: recorded (``last_error``, one
warning per kind of failure, and one per cause: a database that is down fails the recall,
the enqueue and the flush alike, and is said once) while the conversation goes on; with
``strict``, raised as :class:`~mem01session.errors.Mem01MemoryError`."""

from __future__ import annotations

import logging

from ..errors import Mem01MemoryError
from ..logs import describe, get_logger

log = get_logger(__name__)


class FailurePolicy:
    """One session's failure policy, and what it recorded (see the module docstring)."""

    def __init__(self, strict: bool) -> None:
        self.strict = strict
        self.last_error: str | None = None
        self.count = 0  # failures recorded so far (to tell whether an operation had one)
        self._kind = ""  # the kind of the last failure recorded
        self._warned: set[str] = set()  # kinds of failure said in a warning
        self._causes: set[str] = set()  # the errors they came from

    def failed(self, kind: str, exc: BaseException) -> None:
        """Record a failure of ``kind`` (strict: raise it)."""
        cause = describe(exc)
        self.record(f"{kind} failed: {cause}", kind, cause)

    def record(self, message: str, kind: str, cause: str | None = None) -> None:
        """Record a failure described by ``message`` (strict: raise it); ``cause``: the
        error it came from, when one did (said once whatever failed of it)."""
        self.count += 1
        self._kind = kind
        self.last_error = message
        if self.strict:
            raise Mem01MemoryError(message) from None
        if kind in self._warned:
            return
        self._warned.add(kind)
        said = cause is not None and cause in self._causes  # by a failure of another kind
        if cause is not None:
            self._causes.add(cause)
        log.log(
            logging.INFO if said else logging.WARNING,
            "memory %s; the conversation continues without it",
            message,
        )

    def recovered(self, mark: int, *kinds: str) -> None:
        """An operation that began at failure count ``mark`` went through without a failure:
        if the last failure was of one of ``kinds`` (what this operation does), it is over.
        No kinds: the operation exercised everything (a flush)."""
        if self.count == mark and (not kinds or self._kind in kinds):
            self.last_error = None


__all__ = ["FailurePolicy"]
