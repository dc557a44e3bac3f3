"""Serving HTTP on this machine, as the memory browser and the MCP server do: loopback
rules, ``Host`` names, the listening socket, and Uvicorn's log lines kept free of secrets.

Both surfaces use these; neither imports the other.
"""

from __future__ import annotations

import ipaddress
import logging
import socket

from starlette.datastructures import Headers

from .errors import ConfigError
from .logs import RedactingFilter
from .secrets.redaction import redact

MIN_TOKEN_CHARS = 16
LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})
_MAKE_ONE = "make one with python -c 'import secrets; print(secrets.token_urlsafe(24))'"


def check_token(token: str | None) -> None:
    """Refuse an access token that guards nothing: shorter than :data:`MIN_TOKEN_CHARS`,
    or holding whitespace or control characters (sixteen spaces is no secret, and a
    header carrying one is trimmed before it is compared)."""
    if token is None:
        return
    if any(ch.isspace() or not ch.isprintable() for ch in token):
        raise ConfigError(
            f"the access token must not hold spaces or control characters; {_MAKE_ONE}"
        )
    if len(token) < MIN_TOKEN_CHARS:
        raise ConfigError(
            f"the access token must be at least {MIN_TOKEN_CHARS} characters; {_MAKE_ONE}"
        )


def is_loopback(host: str) -> bool:
    """Whether binding ``host`` serves this machine only (``localhost``, 127.0.0.0/8, ::1)."""
    name = host.strip().strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def host_name(headers: Headers) -> str:
    """The ``Host`` header without its port, lower case, brackets of IPv6 removed."""
    host = headers.get("host", "").strip().lower()
    if host.startswith("["):
        return host[1 : host.find("]")] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


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


def http_url(host: str, port: int, path: str = "/") -> str:
    """The URL a server bound to ``host:port`` answers at (an IPv6 host in brackets)."""
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}{path}"
