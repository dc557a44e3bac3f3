"""Serving the browser with Uvicorn: bind first (a busy port fails at once), open the
memory, serve until stopped, close the memory. Usable from the command line and from a
thread (tests, scripts)."""

from __future__ import annotations

import socket
import threading

import uvicorn

from ..config import Settings
from ..memory import Memory
from ..secrets.redaction import register_secret
from ..serving import bind, http_url, scrub_server_logs
from .app import create_app
from .security import Access, check_bind


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
        return http_url(self.host, self.port)

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
