"""Exceptions raised by mem01session.

Every message is passed through :func:`mem01session.secrets.redaction.redact` before it is
raised, so a registered secret (DSN password, API key) never reaches a traceback.
"""

from __future__ import annotations

from .secrets.redaction import redact


class Mem01Error(Exception):
    """Base class of every error this library raises."""

    def __init__(self, message: str) -> None:
        super().__init__(redact(message))


class ConfigError(Mem01Error, ValueError):
    """A setting or argument is missing or malformed."""


class DatabaseError(Mem01Error):
    """PostgreSQL could not be reached or refused an operation."""


class EmbeddingError(Mem01Error):
    """An embedder could not produce vectors: a model that cannot be loaded or was altered,
    or a server that answered in a shape other than one vector per text.

    ``retryable`` is true when a later try may get past it (the embedding process died and
    the next request starts another); false when the same request would fail the same way.
    """

    def __init__(self, message: str, *, retryable: bool = False) -> None:
        self.retryable = retryable
        super().__init__(message)


class MigrationRequiredError(Mem01Error):
    """The database schema is older than this library; run ``mem01session db upgrade``."""


class InvalidOpError(Mem01Error, ValueError):
    """A lifecycle op failed validation; the whole batch was rejected and nothing changed."""

    def __init__(self, index: int, op: str, reason: str, *, single: bool = False) -> None:
        self.index = index
        self.op = op
        self.reason = reason
        # ``single``: the op a verb made of one call (remember, correct), which has no batch
        where = op if single else f"op #{index} ({op})"
        super().__init__(f"{where} rejected: {reason}")


class BeliefNotFoundError(Mem01Error, LookupError):
    """No belief with that id exists for that user."""


class EpisodeNotFoundError(Mem01Error, LookupError):
    """No episode with that id exists for that user."""


class UserErasedError(Mem01Error):
    """The user's memory was erased; writes are refused until the user is reinstated."""


class DocumentError(Mem01Error, ValueError):
    """A memory document (``mem01session import``) is not one this library can import:
    the message names the line and what is wrong with it. Nothing was written."""

    def __init__(self, line: int, reason: str) -> None:
        self.line = line
        self.reason = reason
        super().__init__(f"line {line}: {reason}" if line else reason)


class ImportConflictError(Mem01Error):
    """A user in the document already has memory here (other than from this same
    document): the import leaves that user as they are."""


class MemoryClosedError(Mem01Error):
    """The ``Memory``, a ``Mem01Session`` or a managed chat was closed (or expired); open
    a new one."""


class Mem01MemoryError(Mem01Error):
    """The memory tier failed and the session was created with ``strict=True``."""


class MemoryToolError(Mem01Error):
    """A memory tool (the agent's, or the MCP server's) refused a call: a bad argument, a
    belief that is not the user's, a secret, an erased user, memory out of reach. Its
    message is what the model or the client is told; it never quotes what was refused."""


class ExtractionError(Mem01Error):
    """An extractor failed or proposed output that failed validation; nothing was applied.

    ``retryable`` is true for transient failures (rate limits, server errors, timeouts)
    that a later attempt of the same job may get past.
    """

    def __init__(self, message: str, *, retryable: bool = False) -> None:
        self.retryable = retryable
        super().__init__(message)


def connection_lost(exc: BaseException) -> bool:
    """Whether ``exc`` means the database could not be reached (try again later), as
    opposed to refusing what it was sent (trying again would fail the same way)."""
    import psycopg  # here, not at the top: importing the errors stays cheap

    orig = getattr(exc, "orig", None)
    cause = orig if isinstance(orig, BaseException) else exc
    return isinstance(
        cause,
        psycopg.OperationalError
        | psycopg.InterfaceError
        | OSError
        | TimeoutError
        | DatabaseError
        | MemoryClosedError,
    )


# SQLSTATEs of a server shutting down or crashing (57P01, 57P02), starting up (57P03), or
# taking no more connections for now (53300); class 08 is a lost or refused connection.
_UNREACHABLE_STATES = frozenset({"57P01", "57P02", "57P03", "53300"})


def database_unreachable(exc: BaseException) -> bool:
    """Whether ``exc`` says the database could not be reached or the connection to it was
    lost (an outage: the same work may succeed once it is back), as opposed to a statement
    that failed on a working connection (a constraint, a statement or lock timeout).

    Narrower than :func:`connection_lost`: no timeout, ``OSError`` or error of this library
    counts, since a model or embedding server raises those too. Follows SQLAlchemy's
    ``orig`` and explicit causes (``raise ... from``)."""
    import psycopg

    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if getattr(current, "connection_invalidated", False) is True:  # SQLAlchemy's verdict
            return True
        if isinstance(current, psycopg.Error):
            if not isinstance(current, psycopg.OperationalError | psycopg.InterfaceError):
                return False
            # A pipeline aborted by an earlier statement's error: the connection is fine.
            if isinstance(current, psycopg.errors.PipelineAborted):
                return False
            state = current.sqlstate
            # No SQLSTATE: the client could not connect, or lost the connection.
            return state is None or state.startswith("08") or state in _UNREACHABLE_STATES
        orig = getattr(current, "orig", None)
        current = orig if isinstance(orig, BaseException) else current.__cause__
    return False
