"""The memory tools over MCP: one store shared by Claude Desktop, Cursor, an SDK agent's
``MCPServerStdio`` or any other MCP client (``mem01session mcp``).

:func:`build_server` makes an ``mcp`` ``MCPServer`` offering ``search_memory``,
``remember``, ``correct_memory`` and ``forget_memory`` (:mod:`.toolbox`, the same
operations as the agent's tools, recorded as the source ``mcp-tool``). Bound to one user
(``user_id``: the command's ``--user``), the tools take no user; otherwise each call names
its user in a ``user_id`` argument, and the server trusts the client to name the right one
(bind it to a user, or guard it, when several people's clients reach it). Provenance names
the conversation ``mcp:<client name>`` and the request id.

Transports:

* stdio (:func:`serve_stdio`): the client starts the process. Memory opens in the
  background as the server starts (the embedded PostgreSQL when no URL is configured);
  a failure to open reaches the client as the tools' error, with its reason.
* streamable HTTP (:class:`HttpServer`, path ``/mcp``): the memory browser's network rules
  (:mod:`mem01session.ui.security`): bound to a loopback address by default and then
  answering only requests whose ``Host`` is a loopback name; any other address is refused
  unless an access token is set, which every request must then carry as
  ``Authorization: Bearer <token>`` (compared in constant time; kept out of log lines).
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import WithJsonSchema
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from .. import __version__
from ..checks import check_id, check_timezone
from ..config import Settings
from ..errors import ConfigError, MemoryToolError
from ..extraction.hygiene import clean_text
from ..logs import describe, get_logger
from ..memory import Memory
from ..memory.records import DEFAULT_MAX_TOKENS
from ..secrets.redaction import register_secret
from .toolbox import ARGUMENTS, DESCRIPTIONS, MCP_TOOL, MemoryToolbox

log = get_logger(__name__)

NAME = "mem01session"
INSTRUCTIONS = (
    "Durable memory of the user across conversations and applications. Search it before "
    "answering about the user's life, preferences or past; remember lasting facts the user "
    "states; correct or forget a note by the id a search shows."
)
HTTP_PATH = "/mcp"
CLIENT_NAME_CHARS = 60

# Each argument is passed on as the client sent it, and the client is told its type: the
# toolbox checks it, with errors that never quote it. Typed here, the server's validation
# took `true` and `2.0` for belief ids (and changed memory with them), and quoted a bad
# value back in its error, a pasted key included.
_STRING = {"type": "string"}
Query = Annotated[Any, WithJsonSchema({**_STRING, "description": ARGUMENTS["query"]})]
History = Annotated[
    Any, WithJsonSchema({"type": "boolean", "description": ARGUMENTS["include_history"]})
]
Statement = Annotated[Any, WithJsonSchema({**_STRING, "description": ARGUMENTS["statement"]})]
Key = Annotated[
    Any,
    WithJsonSchema({"anyOf": [_STRING, {"type": "null"}], "description": ARGUMENTS["key"]}),
]
BeliefId = Annotated[Any, WithJsonSchema({"type": "integer", "description": ARGUMENTS["id"]})]
Correction = Annotated[Any, WithJsonSchema({**_STRING, "description": ARGUMENTS["correction"]})]
Reason = Annotated[Any, WithJsonSchema({**_STRING, "description": ARGUMENTS["reason"]})]
UserId = Annotated[Any, WithJsonSchema({**_STRING, "description": ARGUMENTS["user_id"]})]


def conversation(ctx: Context[Any, Any] | None) -> str:
    """``mcp:<client name>`` (the name the client gave at initialization), else ``mcp``."""
    name: object = None
    with contextlib.suppress(Exception):
        name = ctx.session.client_params.client_info.name  # type: ignore[union-attr]
    cleaned = clean_text(name, CLIENT_NAME_CHARS) if isinstance(name, str) else ""
    return f"mcp:{cleaned}" if cleaned else "mcp"


def _request_ref(ctx: Context[Any, Any] | None) -> str | None:
    with contextlib.suppress(Exception):
        return f"mcp-request-{ctx.request_id}"[:200]  # type: ignore[union-attr]
    return None


def build_server(
    memory: Memory,
    *,
    user_id: str | None = None,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    lifespan: Callable[[MCPServer[Any]], contextlib.AbstractAsyncContextManager[Any]] | None = None,
    timezone: str | None = None,
) -> MCPServer[Any]:
    """An MCP server offering the memory tools over ``memory``: for ``user_id`` only, or,
    without it, for the user each call names; a search dates in ``timezone`` (an IANA
    zone; None: each user's recorded one, else UTC)."""
    bound = None if user_id is None else check_id("user_id", user_id)
    if timezone is not None:
        check_timezone("timezone", timezone)
    server: MCPServer[Any] = MCPServer(
        NAME,
        version=__version__,
        instructions=INSTRUCTIONS,
        lifespan=lifespan,
        log_level="WARNING",
    )

    async def run(
        user: str, ctx: Context[Any, Any] | None, call: Callable[[MemoryToolbox], Awaitable[str]]
    ) -> str:
        try:
            box = MemoryToolbox(
                memory, user, source=MCP_TOOL, conversation=conversation(ctx), max_tokens=max_tokens
            )
            return await call(box)
        except MemoryToolError as exc:
            raise ToolError(str(exc)) from None

    if bound is None:

        async def search_memory(
            ctx: Context[Any, Any], user_id: UserId, query: Query, include_history: History = False
        ) -> str:
            return await run(
                user_id,
                ctx,
                lambda b: b.search(query, include_history=include_history, timezone=timezone),
            )

        async def remember(
            ctx: Context[Any, Any], user_id: UserId, statement: Statement, key: Key = None
        ) -> str:
            ref = _request_ref(ctx)
            return await run(user_id, ctx, lambda b: b.remember(statement, key=key, item_ref=ref))

        async def correct_memory(
            ctx: Context[Any, Any], user_id: UserId, id: BeliefId, statement: Correction
        ) -> str:
            ref = _request_ref(ctx)
            return await run(user_id, ctx, lambda b: b.correct(id, statement, item_ref=ref))

        async def forget_memory(
            ctx: Context[Any, Any], user_id: UserId, id: BeliefId, reason: Reason
        ) -> str:
            ref = _request_ref(ctx)
            return await run(user_id, ctx, lambda b: b.forget(id, reason, item_ref=ref))

        tools: tuple[Callable[..., Awaitable[str]], ...] = (
            search_memory,
            remember,
            correct_memory,
            forget_memory,
        )
    else:
        user = bound

        async def search_memory_bound(
            ctx: Context[Any, Any], query: Query, include_history: History = False
        ) -> str:
            return await run(
                user,
                ctx,
                lambda b: b.search(query, include_history=include_history, timezone=timezone),
            )

        async def remember_bound(
            ctx: Context[Any, Any], statement: Statement, key: Key = None
        ) -> str:
            ref = _request_ref(ctx)
            return await run(user, ctx, lambda b: b.remember(statement, key=key, item_ref=ref))

        async def correct_memory_bound(
            ctx: Context[Any, Any], id: BeliefId, statement: Correction
        ) -> str:
            ref = _request_ref(ctx)
            return await run(user, ctx, lambda b: b.correct(id, statement, item_ref=ref))

        async def forget_memory_bound(ctx: Context[Any, Any], id: BeliefId, reason: Reason) -> str:
            ref = _request_ref(ctx)
            return await run(user, ctx, lambda b: b.forget(id, reason, item_ref=ref))

        tools = (search_memory_bound, remember_bound, correct_memory_bound, forget_memory_bound)

    for fn, name in zip(tools, DESCRIPTIONS, strict=True):
        server.add_tool(fn, name=name, description=DESCRIPTIONS[name])
    return server


# -- stdio ---------------------------------------------------------------------------------


def _opening(
    memory: Memory,
) -> Callable[[MCPServer[Any]], contextlib.AbstractAsyncContextManager[None]]:
    """A lifespan that starts opening ``memory`` without holding up the handshake, and
    closes it when the server stops."""

    @contextlib.asynccontextmanager
    async def lifespan(_server: MCPServer[Any]) -> AsyncIterator[None]:
        async def warm() -> None:
            try:
                await memory.engine()
            except Exception as exc:  # the tools say it again, with the reason, when called
                log.warning("mcp: memory could not be opened: %s", describe(exc))

        opening = asyncio.ensure_future(warm())
        try:
            yield
        finally:
            opening.cancel()
            with contextlib.suppress(BaseException):
                await opening
            await memory.aclose()

    return lifespan


async def serve_stdio(
    settings: Settings, *, user_id: str | None = None, timezone: str | None = None
) -> None:
    """Serve the memory tools on this process's stdin and stdout until the client leaves."""
    memory = Memory(settings)
    server = build_server(memory, user_id=user_id, lifespan=_opening(memory), timezone=timezone)
    try:
        await server.run_stdio_async()
    finally:
        await memory.aclose()


# -- streamable HTTP -----------------------------------------------------------------------


def check_http_bind(host: str, token: str | None) -> None:
    """Refuse a non-loopback ``host`` without an access token, and a short token."""
    from ..serving import check_token, is_loopback

    check_token(token)
    if token is None and not is_loopback(host):
        raise ConfigError(
            f"refusing to serve MCP on {host!r}, which other machines can reach, without an "
            "access token: its tools read and change what is remembered about users. Use "
            "the default 127.0.0.1, or pass --token (or MEM01_MCP_TOKEN)"
        )


class HttpGuard:
    """ASGI middleware: the ``Host`` check (loopback binds) and the bearer token."""

    def __init__(self, app: ASGIApp, *, hosts: frozenset[str] | None, token: str | None) -> None:
        self.app = app
        self.hosts = hosts
        self.token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        from ..serving import host_name

        headers = Headers(scope=scope)
        if self.hosts is not None and host_name(headers) not in self.hosts:
            await _refuse(send, 421, "this MCP server answers only to loopback host names")
            return
        if self.token is not None and not self._authorized(headers):
            await _refuse(send, 401, "an access token is needed: Authorization: Bearer <token>")
            return
        await self.app(scope, receive, send)

    def _authorized(self, headers: Headers) -> bool:
        assert self.token is not None
        auth = headers.get("authorization", "")
        if not auth.lower().startswith("bearer "):
            return False
        offered = auth[7:].strip().encode("utf-8", "replace")
        return hmac.compare_digest(offered, self.token.encode("utf-8", "replace"))


async def _refuse(send: Send, status: int, message: str) -> None:
    body = message.encode()
    headers = [(b"content-type", b"text/plain; charset=utf-8")]
    if status == 401:
        headers.append((b"www-authenticate", b"Bearer"))
    headers.append((b"content-length", str(len(body)).encode()))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def http_app(server: MCPServer[Any], *, host: str, token: str | None) -> ASGIApp:
    """The server's streamable HTTP application behind :class:`HttpGuard`."""
    from ..serving import LOOPBACK_HOSTS, is_loopback

    hosts = None
    if is_loopback(host):
        hosts = LOOPBACK_HOSTS | {host.strip().strip("[]").lower()}
    inner = server.streamable_http_app(streamable_http_path=HTTP_PATH, host=host)
    return HttpGuard(inner, hosts=hosts, token=token)


class HttpServer:
    """The memory tools over streamable HTTP on one socket (``port`` 0: any free port).

    Refuses a bad bind before anything opens (:func:`check_http_bind`) and binds at once
    (a busy port fails here). ``await serve()`` opens the memory, serves until
    :meth:`stop`, and closes it; :attr:`url` says where, :attr:`ready` is set once it
    accepts requests.
    """

    def __init__(
        self,
        settings: Settings,
        *,
        user_id: str | None = None,
        host: str = "127.0.0.1",
        port: int = 8702,
        token: str | None = None,
        log_level: str = "warning",
        timezone: str | None = None,
    ) -> None:
        check_http_bind(host, token)
        if user_id is not None:
            check_id("user_id", user_id)
        if timezone is not None:
            check_timezone("timezone", timezone)
        register_secret(token)
        from ..serving import bind

        self.settings = settings
        self.user_id = user_id
        self.timezone = timezone
        self.host = host
        self.token = token
        self.log_level = log_level
        self.socket: socket.socket = bind(host, port)
        self.port = int(self.socket.getsockname()[1])
        self.ready = asyncio.Event()
        self._server: Any = None
        self._stopping = False

    @property
    def url(self) -> str:
        from ..serving import http_url

        return http_url(self.host, self.port, HTTP_PATH)

    async def serve(self) -> None:
        import uvicorn

        from ..serving import scrub_server_logs

        scrub_server_logs()
        try:
            memory = await Memory.open(self.settings)
        except BaseException:
            self.socket.close()
            raise
        try:
            server = build_server(memory, user_id=self.user_id, timezone=self.timezone)
            app = http_app(server, host=self.host, token=self.token)
            config = uvicorn.Config(
                app, log_level=self.log_level, lifespan="on", server_header=False
            )
            ready = self.ready

            class Server(uvicorn.Server):
                async def startup(self, sockets: list[socket.socket] | None = None) -> None:
                    await super().startup(sockets=sockets)
                    if self.started:
                        ready.set()

            self._server = Server(config)
            if self._stopping:
                return
            await self._server.serve(sockets=[self.socket])
        finally:
            self.ready.clear()
            self.socket.close()
            await memory.aclose()

    def stop(self) -> None:
        """Ask :meth:`serve` to end (from the event loop it runs in)."""
        self._stopping = True
        if self._server is not None:
            self._server.should_exit = True


__all__ = ["HttpServer", "build_server", "check_http_bind", "conversation", "serve_stdio"]
