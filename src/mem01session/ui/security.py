"""Who may use the memory browser, and how a page proves a form came from it.

* Bound to a loopback address by default; any other address needs ``allow_remote`` and an
  access token (:func:`check_bind`).
* With a token, every request must carry it: ``?token=`` once (answered with a cookie
  and a redirect that drops it from the address bar), the cookie, or an
  ``Authorization: Bearer`` header. Compared in constant time.
* Requests whose ``Host`` header names another host are refused: a web page cannot point
  a DNS name it controls at 127.0.0.1 and read the browser through it.
* A request that changes something (``POST``) is refused when the browser says it comes
  from another site: ``Sec-Fetch-Site`` other than ``same-origin`` (``none``: typed by
  the user), or an ``Origin`` (without one, a ``Referer``) that is not this server's own.
  Clients that send none of these (``curl``) are not browsers a page can drive.
* Every form carries a CSRF token bound to the browser that received it: an HMAC, under
  a key made when the process starts, of a random id kept in that browser's cookie
  (checked by the routes with :meth:`Access.csrf_ok`).
* Every answer says: no framing, no inline script, not cached, a referrer only to this
  origin (``no-referrer`` would make the browser's own forms send ``Origin: null``).
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections.abc import Iterable
from dataclasses import dataclass, field
from http.cookies import SimpleCookie
from urllib.parse import parse_qsl, urlsplit

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..errors import ConfigError
from ..serving import LOOPBACK_HOSTS, check_token, host_name, is_loopback
from .markup import esc

COOKIE = "mem01_ui"
BROWSER_COOKIE = "mem01_browser"
BROWSER_KEY = "mem01.browser"  # where the Guard leaves the browser's id in the ASGI scope
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
MAX_BODY_BYTES = 256 * 1024

HEADERS = [
    (
        b"content-security-policy",
        b"default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self'; "
        b"form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    ),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"same-origin"),
]


def check_bind(host: str, *, allow_remote: bool, token: str | None) -> None:
    """Refuse to serve a non-loopback ``host`` unless remote use is asked for and guarded."""
    check_token(token)
    if is_loopback(host):
        return
    if not allow_remote:
        raise ConfigError(
            f"refusing to serve on {host!r}, which other machines can reach: the memory "
            "browser shows and changes what is remembered about users. Use the default "
            "127.0.0.1 (e.g. through an SSH tunnel), or pass --allow-remote with --token"
        )
    if token is None:
        raise ConfigError(f"--allow-remote on {host!r} needs an access token (--token)")


@dataclass(frozen=True)
class Access:
    """The browser's secrets and the hosts it answers to.

    ``token``: required from every request when set. ``csrf_key``: the per-process key
    that binds each browser's CSRF token to it. ``hosts``: the ``Host`` names accepted
    (``None``: any, for a server reachable under names it cannot know).
    """

    token: str | None = field(default=None, repr=False)
    csrf_key: bytes = field(default_factory=lambda: secrets.token_bytes(32), repr=False)
    hosts: frozenset[str] | None = LOOPBACK_HOSTS

    @classmethod
    def for_bind(cls, host: str, token: str | None) -> Access:
        """Loopback: only loopback ``Host`` names (and ``host`` itself). Otherwise any."""
        names: frozenset[str] | None = None
        if is_loopback(host):
            names = LOOPBACK_HOSTS | {host.strip().strip("[]").lower()}
        return cls(token=token, hosts=names)

    def csrf_for(self, browser: str) -> str:
        """The CSRF token of the browser whose cookie holds ``browser``."""
        return hmac.new(self.csrf_key, browser.encode(), hashlib.sha256).hexdigest()

    def csrf_ok(self, submitted: object, browser: str | None) -> bool:
        """Whether ``submitted`` is the token this process gave that browser."""
        return (
            isinstance(submitted, str)
            and browser is not None
            and _same(submitted, self.csrf_for(browser))
        )

    def cookie_value(self) -> str:
        """What the cookie holds: a digest of the token (the token itself never is)."""
        assert self.token is not None
        return hmac.new(self.token.encode(), b"mem01session-ui", hashlib.sha256).hexdigest()

    def authorized(self, headers: Headers) -> bool:
        """Whether a request carries the token (always true without one)."""
        if self.token is None:
            return True
        auth = headers.get("authorization", "")
        if auth.lower().startswith("bearer ") and _same(auth[7:].strip(), self.token):
            return True
        cookie = _cookie(headers.get("cookie", ""))
        return cookie is not None and _same(cookie, self.cookie_value())


def _key(pair: str) -> str | None:
    parsed = parse_qsl(pair, keep_blank_values=True)
    return parsed[0][0] if parsed else None


def _same(a: str, b: str) -> bool:
    return hmac.compare_digest(a.encode("utf-8", "replace"), b.encode("utf-8", "replace"))


def _cookie(header: str, name: str = COOKIE) -> str | None:
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(header)
    except Exception:  # a malformed Cookie header is no cookie
        return None
    morsel = jar.get(name)
    return None if morsel is None else morsel.value


_BROWSER_ID = re.compile(r"[A-Za-z0-9_\-]{32}")


def same_origin(headers: Headers) -> bool:
    """Whether a browser's request comes from this server's own pages: no cross-site
    ``Sec-Fetch-Site``, and an ``Origin`` (else a ``Referer``) naming the host it asked."""
    site = headers.get("sec-fetch-site")
    if site is not None and site not in ("same-origin", "none"):
        return False
    claimed = headers.get("origin") or headers.get("referer")
    if claimed is None:
        return True  # not a browser a page can drive (curl, scripts)
    try:
        netloc = urlsplit(claimed).netloc.lower()
    except ValueError:
        return False
    return bool(netloc) and netloc == headers.get("host", "").strip().lower()


class Guard:
    """ASGI middleware: host check, body size limit, access token, security headers."""

    def __init__(self, app: ASGIApp, access: Access) -> None:
        self.app = app
        self.access = access

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        static = str(scope.get("path", "")).startswith("/static/")

        async def send_guarded(message: Message) -> None:
            if message["type"] == "http.response.start":
                extra = HEADERS if static else [*HEADERS, (b"cache-control", b"no-store")]
                message["headers"] = [*message.get("headers", []), *extra]
            await send(message)

        refusal = self._refusal(scope, headers)
        if refusal is not None:
            await _plain(send_guarded, *refusal)
            return
        browser = _cookie(headers.get("cookie", ""), BROWSER_COOKIE)
        if browser is None or not _BROWSER_ID.fullmatch(browser):
            browser = secrets.token_urlsafe(24)  # a browser seen for the first time
            new_cookie = f"{BROWSER_COOKIE}={browser}; Path=/; HttpOnly; SameSite=Strict".encode()
            inner = send_guarded

            async def send_guarded(message: Message) -> None:
                if message["type"] == "http.response.start":
                    message["headers"] = [*message.get("headers", []), (b"set-cookie", new_cookie)]
                await inner(message)

        scope.setdefault("state", {})[BROWSER_KEY] = browser
        query = bytes(scope.get("query_string", b"")).decode("latin-1")
        offered = [v for k, v in parse_qsl(query, keep_blank_values=True) if k == "token"]
        if self.access.token is not None and offered:
            if not _same(offered[-1], self.access.token):
                await _plain(send_guarded, 401, "Wrong access token", _TOKEN_HELP)
                return
            # The same address without the token, so that it leaves the address bar.
            rest = "&".join(p for p in query.split("&") if p and _key(p) != "token")
            path = bytes(scope.get("raw_path") or str(scope.get("path", "/")).encode())
            # "//evil.com/" is a path here, and another site to a browser: one slash only.
            path = b"/" + path.lstrip(b"/\\")
            location = path + (f"?{rest}".encode("latin-1") if rest else b"")
            cookie = f"{COOKIE}={self.access.cookie_value()}; Path=/; HttpOnly; SameSite=Strict"
            await _redirect(send_guarded, location, cookie)
            return
        if not self.access.authorized(headers):
            await _plain(send_guarded, 401, "Access token needed", _TOKEN_HELP)
            return
        await self.app(scope, receive, send_guarded)

    def _refusal(self, scope: Scope, headers: Headers) -> tuple[int, str, str] | None:
        hosts = self.access.hosts
        if hosts is not None and host_name(headers) not in hosts:
            return (
                400,
                "Unexpected host",
                "This memory browser answers only to the loopback names "
                f"{', '.join(sorted(hosts))}; open it through one of them.",
            )
        length = headers.get("content-length", "0")
        if not length.isdigit() or int(length) > MAX_BODY_BYTES:
            return 413, "Request too large", "Forms here are small; this one is not."
        if str(scope.get("method", "GET")).upper() not in SAFE_METHODS and not same_origin(headers):
            return (
                403,
                "Cross-site request refused",
                "This request came from another site (its Origin, Referer or "
                "Sec-Fetch-Site says so): the memory browser changes memory only for its "
                "own pages. Open it and use its forms.",
            )
        return None


_TOKEN_HELP = (
    "This memory browser was started with an access token. Open it with ?token=… "
    "appended to its address once (a cookie then keeps you in), or send the header "
    "Authorization: Bearer …"
)


async def _plain(send: Send, status: int, title: str, detail: str) -> None:
    body = (
        f"<!doctype html><meta charset=utf-8><title>{esc(title)}</title>"
        f"<h1>{esc(title)}</h1><p>{esc(detail)}</p>"
    ).encode()
    await _respond(send, status, body, [(b"content-type", b"text/html; charset=utf-8")])


async def _redirect(send: Send, location: bytes, cookie: str) -> None:
    headers = [(b"location", location), (b"set-cookie", cookie.encode())]
    await _respond(send, 303, b"", headers)


async def _respond(
    send: Send, status: int, body: bytes, headers: Iterable[tuple[bytes, bytes]]
) -> None:
    start = [*headers, (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": start})
    await send({"type": "http.response.body", "body": body})
