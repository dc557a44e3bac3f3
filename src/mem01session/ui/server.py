"""Serving the browser with Uvicorn: bind first (a busy port fails at once), open the
memory, serve until stopped, close the memory. Usable from the command line and from a
thread (tests, scripts)."""

from __future__ import annotations

import logging
import socket
import threading

import uvicorn

from ..config import Settings
from ..logs import RedactingFilter
from ..memory import Memory
from ..redaction import redact, register_secret
from .app import create_app
from .security import Access, check_bind


class _RedactArgs(logging.Filter):
    """Uvicorn's access formatter needs the record's arguments: scrub each in place."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(redact(a) if isinstance(a, str) else a for a in record.args)
        record.msg = redact(str(record.msg))
        return True


def scrub_server_logs() -> None:
    """Keep secrets (the access token, a DSN password) out of Uvicorn's log lines."""
    for name, kind in (("uvicorn.access", _RedactArgs), ("uvicorn.error", RedactingFilter)):
        logger = logging.getLogger(name)
        if not any(isinstance(f, kind) for f in logger.filters):
            logger.addFilter(kind())


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port`` (``port`` 0: any free port)."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
    except BaseException:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


class _Server(uvicorn.Server):
    """Uvicorn's server, telling a thread when it has started."""

    def __init__(self, config: uvicorn.Config, ready: threading.Event) -> None:
        super().__init__(config)
        self.ready = ready

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        if self.started:
            self.ready.set()


class BrowserServer:
    """One memory browser on one socket.

    ``await serve()`` runs it (in any thread's event loop); :meth:`stop` asks it to end
    from any thread; :attr:`ready` is set once it accepts requests, :attr:`url` says where.
    """

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 8701,
        allow_remote: bool = False,
        token: str | None = None,
        log_level: str = "info",
    ) -> None:
        check_bind(host, allow_remote=allow_remote, token=token)
        register_secret(token)
        self.settings = settings if settings is not None else Settings.from_env()
        self.host = host
        self.access = Access.for_bind(host, token)
        self.socket = bind(host, port)
        self.port = int(self.socket.getsockname()[1])
        self.log_level = log_level
        self.ready = threading.Event()
        self._server: uvicorn.Server | None = None
        self._stop = threading.Event()

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/"

    async def serve(self) -> None:
        """Open the memory, serve until :meth:`stop` (or a signal), close everything."""
        scrub_server_logs()
        try:
            memory = await Memory.open(self.settings)
        except BaseException:
            self.socket.close()
            raise
        try:
            app = create_app(memory=memory, access=self.access)
            config = uvicorn.Config(
                app,
                log_level=self.log_level,
                lifespan="on",
                server_header=False,
                proxy_headers=False,
            )
            server = self._server = _Server(config, self.ready)
            if self._stop.is_set():
                return
            await server.serve(sockets=[self.socket])
        finally:
            self.ready.clear()
            self.socket.close()
            await memory.aclose()

    def stop(self) -> None:
        self._stop.set()
        if self._server is not None:
            self._server.should_exit = True
