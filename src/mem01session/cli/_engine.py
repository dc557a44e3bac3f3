"""Running an inspector command: open the engine, run, close; and input checks."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import NoReturn, TypeVar

import typer
from rich.markup import escape
from sqlalchemy.exc import SQLAlchemyError

from ..config import Settings
from ..engine import BeliefEngine
from ..engine.records import Belief
from ..errors import BeliefNotFoundError, Mem01Error
from ..memory import Memory
from ..queue.jobs import JobStore
from ..redaction import redact
from ._common import err_console

T = TypeVar("T")

Work = Callable[[BeliefEngine], Awaitable[T]]


def die(message: str) -> NoReturn:
    """Exit 1 with a one-line error (never wrapped); secrets masked, brackets literal.

    Like :func:`._common.fail`, but the message is escaped from console markup.
    """
    flat = escape(redact(" ".join(message.split())))
    err_console.print(f"[bold red]error:[/] {flat}", highlight=False, soft_wrap=True)
    raise typer.Exit(1)


def with_engine(work: Work[T]) -> T:
    """Open the configured engine (embedder matching the database), run ``work``, close.

    Every failure becomes a one-line, redacted message and exit code 1: never a traceback.
    """

    async def run() -> T:
        async with Memory(Settings.from_env()) as memory:
            return await work(await memory.engine())

    try:
        return asyncio.run(run())
    except (typer.Exit, typer.Abort, KeyboardInterrupt):
        raise
    except Mem01Error as exc:
        die(str(exc))
    except SQLAlchemyError as exc:
        die(f"database error: {_first_line(exc)}")
    except Exception as exc:  # an unexpected failure is still a clean message
        die(f"{type(exc).__name__}: {_first_line(exc)}")


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


def parse_id(value: str, what: str = "belief") -> int:
    """A positive integer id from the command line, or a clean error."""
    text = value.strip().lstrip("#")
    if not text.isdigit() or int(text) < 1 or int(text) > 2**63 - 1:
        die(f"{what} id must be a positive integer, got {value!r}")
    return int(text)


def check_positive(name: str, value: int) -> None:
    """Refuse a non-positive numeric option with a one-line message."""
    if value <= 0:
        die(f"{name} must be a positive integer, got {value}")


async def require_user(engine: BeliefEngine, user: str) -> None:
    """Fail unless the user has durable memory: an applied batch, an erase, or a job."""
    if await engine.user_version(user) > 0:
        return
    if await JobStore(engine.db).list_jobs(user_id=user, limit=1):
        return
    die(f"unknown user {user!r}: no memory recorded for this user")


async def require_belief(engine: BeliefEngine, user: str, belief_id: int) -> Belief:
    """The user's belief; a missing id and another user's id fail with the same message."""
    try:
        return await engine.get(user, belief_id)
    except BeliefNotFoundError:
        die(f"no belief #{belief_id} for user {user!r}")
