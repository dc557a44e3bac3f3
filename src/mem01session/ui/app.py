"""The Starlette application: routes, error pages, and the memory it opens and closes."""

from __future__ import annotations

import traceback
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path

from sqlalchemy.exc import SQLAlchemyError
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from ..config import Settings
from ..errors import (
    BeliefNotFoundError,
    ConfigError,
    DatabaseError,
    EpisodeNotFoundError,
    InvalidOpError,
    MemoryClosedError,
    UserErasedError,
)
from ..logs import get_logger
from ..memory import Memory
from ..secrets.redaction import redact
from . import actions, pages
from .context import Context
from .data import PageError
from .layout import error_body, page
from .security import Access, Guard

log = get_logger(__name__)

STATIC = Path(__file__).parent / "static"

Handler = Callable[[Context, Request], Awaitable[Response]]


def create_app(
    settings: Settings | None = None,
    *,
    memory: Memory | None = None,
    access: Access | None = None,
) -> Starlette:
    """The memory browser as an ASGI application.

    With ``memory``, that (open) memory is used and left open: it must belong to the event
    loop that serves the app. Without, the app opens a ``Memory`` from ``settings``
    (default: the environment) when it starts and closes it when it stops. ``access``
    holds the access token, the CSRF token and the accepted ``Host`` names (default: no
    token, loopback names only).
    """
    access = access if access is not None else Access()
    ctx = Context(access, memory)

    @asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        if memory is not None:
            yield
            return
        # A wrong URL or schema fails here, at start.
        opened = await Memory.open(settings if settings is not None else Settings.from_env())
        ctx.memory = opened
        try:
            yield
        finally:
            ctx.memory = None
            await opened.aclose()

    def get(path: str, handler: Handler) -> Route:
        return Route(path, _endpoint(ctx, handler), methods=["GET"])

    def post(path: str, handler: Handler) -> Route:
        return Route(path, _endpoint(ctx, handler), methods=["POST"])

    routes = [
        get("/", pages.users),
        get("/user", pages.user),
        get("/belief", pages.belief),
        get("/episodes", pages.episodes),
        get("/episode", pages.episode),
        get("/recall", pages.recall),
        get("/jobs", pages.jobs),
        get("/erase", pages.erase_form),
        post("/correct", actions.correct),
        post("/forget", actions.forget),
        post("/retry", actions.retry),
        post("/erase", actions.erase),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]
    return Starlette(
        routes=routes,
        middleware=[Middleware(Guard, access=access)],
        exception_handlers={HTTPException: _http_error},
        lifespan=lifespan,
    )


def _endpoint(ctx: Context, handler: Handler) -> Callable[[Request], Awaitable[Response]]:
    async def run(request: Request) -> Response:
        try:
            return await handler(ctx, request)
        except Exception as exc:
            return _error_response(request, exc)

    run.__name__ = handler.__name__
    return run


def error_page(status: int, title: str, message: str, user: str | None = None) -> Response:
    body = page(title, error_body(title, message), user=user)
    return HTMLResponse(body, status_code=status)


def _error_response(request: Request, exc: Exception) -> Response:
    """An error as a page: bad input 400, unknown 404, conflicts 409, database 503; a bug
    500. Messages are redacted; tracebacks never reach the page or the log."""
    if isinstance(exc, PageError):
        return error_page(exc.status, exc.title, exc.message, exc.user)
    message = _first_line(exc)
    if isinstance(exc, BeliefNotFoundError):
        return error_page(404, "Unknown belief", message)
    if isinstance(exc, EpisodeNotFoundError):
        return error_page(404, "Unknown episode", message)
    if isinstance(exc, UserErasedError):
        return error_page(409, "User erased", message)
    if isinstance(exc, ConfigError | InvalidOpError):
        return error_page(400, "Refused", message)
    if isinstance(exc, DatabaseError | MemoryClosedError | SQLAlchemyError | OSError):
        log.warning(
            "ui: %s %s: database unavailable: %s", request.method, request.url.path, message
        )
        return error_page(503, "Database unavailable", message)
    where = traceback.extract_tb(exc.__traceback__)[-1:] if exc.__traceback__ else []
    at = f" at {Path(where[0].filename).name}:{where[0].lineno}" if where else ""
    log.error(
        "ui: %s %s failed%s: %s: %s",
        request.method,
        request.url.path,
        at,
        type(exc).__name__,
        message,
    )
    return error_page(500, "Unexpected error", f"{type(exc).__name__}: {message}")


def _first_line(exc: BaseException) -> str:
    lines = redact(str(exc)).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


async def _http_error(request: Request, exc: Exception) -> Response:
    status = exc.status_code if isinstance(exc, HTTPException) else 500
    if status == 404:
        return error_page(404, "Not found", f"There is no page at {request.url.path}.")
    if status == 405:
        return error_page(405, "Method not allowed", f"{request.method} is not accepted here.")
    return error_page(status, "Refused", str(getattr(exc, "detail", "")))
