"""Loopback by default, the access token when remote, the Host check, CSRF, headers."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from starlette.testclient import TestClient

from mem01session.errors import ConfigError
from mem01session.ui import Access, create_app
from mem01session.ui.security import BROWSER_COOKIE, COOKIE, check_bind, is_loopback

from .conftest import BASE, csrf_of, rows
from .seed import ALICE, Seeded

TOKEN = "s3cret-token-for-tests-0123456789"


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "::1", "[::1]", "localhost"])
def test_loopback_hosts(host: str) -> None:
    assert is_loopback(host)
    check_bind(host, allow_remote=False, token=None)


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.10", "example.com", ""])
def test_other_hosts_need_allow_remote_and_a_token(host: str) -> None:
    assert not is_loopback(host)
    with pytest.raises(ConfigError, match="--allow-remote"):
        check_bind(host, allow_remote=False, token=TOKEN)
    with pytest.raises(ConfigError, match="needs an access token"):
        check_bind(host, allow_remote=True, token=None)
    check_bind(host, allow_remote=True, token=TOKEN)


def test_a_short_token_is_refused() -> None:
    with pytest.raises(ConfigError, match="at least 16 characters"):
        check_bind("0.0.0.0", allow_remote=True, token="short")
    with pytest.raises(ConfigError, match="must not hold spaces"):
        check_bind("0.0.0.0", allow_remote=True, token=" " * 16)


@pytest.fixture
def reader(shared: tuple[TestClient, Seeded]) -> TestClient:
    """For the tests that change nothing: one seeded database and client for the module."""
    return shared[0]


def test_every_answer_carries_the_security_headers(reader: TestClient) -> None:
    client = reader
    response = client.get("/")
    assert response.status_code == 200
    csp = response.headers["content-security-policy"]
    assert "default-src 'none'" in csp and "script-src 'self'" in csp
    assert "frame-ancestors 'none'" in csp
    assert response.headers["x-frame-options"] == "DENY"
    # Not no-referrer: then the browser's own forms would post with Origin: null.
    assert response.headers["referrer-policy"] == "same-origin"
    assert response.headers["cache-control"] == "no-store"
    assert client.get("/nowhere").headers["x-content-type-options"] == "nosniff"


@pytest.mark.parametrize("host", ["evil.example", "evil.example:8701", "192.168.1.10"])
def test_another_host_name_is_refused(reader: TestClient, host: str) -> None:
    """A page cannot rebind its own DNS name to 127.0.0.1 and read the browser."""
    client = reader
    response = client.get("/", headers={"host": host})
    assert response.status_code == 400
    assert "Unexpected host" in response.text
    for name in ("localhost:8701", "127.0.0.1", "[::1]:8701"):
        assert client.get("/", headers={"host": name}).status_code == 200


def test_a_large_body_is_refused(reader: TestClient) -> None:
    response = reader.post("/correct", content=b"x" * 300_000)
    assert response.status_code == 413


@pytest.mark.parametrize("token", [None, "", "wrong", "wrong-but-long-enough-token"])
def test_posts_without_the_csrf_token_are_refused(
    client: TestClient, seeded: Seeded, env: str, token: str | None
) -> None:
    form = {"u": ALICE, "id": str(seeded.rent), "reason": "csrf test"}
    if token is not None:
        form["csrf"] = token
    for path, extra in (
        ("/forget", {}),
        ("/correct", {"text": "Pays nothing"}),
        ("/erase", {"confirm": ALICE}),
        ("/retry", {"id": str(seeded.failed_job)}),
    ):
        response = client.post(path, data=form | extra)
        assert response.status_code == 403, path
        assert "CSRF token" in response.text
    assert rows(env, "SELECT status FROM beliefs WHERE id = %s", seeded.rent) == [("active",)]
    assert rows(env, "SELECT erased_at FROM memory_users WHERE user_id = %s", ALICE) == [(None,)]
    assert rows(env, "SELECT status FROM memory_jobs WHERE id = %s", seeded.failed_job) == [
        ("failed",)
    ]


def test_the_csrf_token_is_per_process_and_per_browser(seeded: Seeded) -> None:
    first, second = Access(), Access()
    assert first.csrf_for("b" * 32) != second.csrf_for("b" * 32)
    page = f"/belief?u={ALICE}&id={seeded.rent}"
    with (
        TestClient(create_app(access=first), base_url=BASE) as one,
        TestClient(create_app(access=first), base_url=BASE) as other,
    ):
        mine, theirs = csrf_of(one.get(page).text), csrf_of(other.get(page).text)
        assert mine != theirs  # two browsers (cookie jars), two tokens
        assert csrf_of(one.get(page).text) == mine  # stable for one browser
        cookie = one.cookies.get(BROWSER_COOKIE)
        assert cookie is not None and first.csrf_ok(mine, cookie)
        form = {"u": ALICE, "id": str(seeded.rent), "reason": "stolen token"}
        # Another browser's token is refused, and so is the right token without its cookie.
        assert other.post("/forget", data=form | {"csrf": mine}).status_code == 403
        one.cookies.clear()
        assert one.post("/forget", data=form | {"csrf": mine}).status_code == 403


GOOD = {"origin": BASE}
CROSS_SITE: list[dict[str, str]] = [
    {"origin": "https://evil.example"},
    {"origin": "null"},
    {"origin": "http://127.0.0.1:9999"},  # another port of this machine: another origin
    {"origin": BASE, "sec-fetch-site": "cross-site"},
    {"origin": BASE, "sec-fetch-site": "same-site"},
    {"sec-fetch-site": "cross-site"},
    {"referer": "https://evil.example/page"},
    {"referer": "not a url ["},
]


@pytest.mark.parametrize(
    "headers", CROSS_SITE, ids=lambda h: ",".join(f"{k}={v}" for k, v in h.items())
)
def test_a_cross_site_request_changes_nothing_even_with_a_valid_token(
    client: TestClient, seeded: Seeded, env: str, headers: dict[str, str]
) -> None:
    token = csrf_of(client.get(f"/erase?u={ALICE}").text)  # this browser's own, valid
    for path, extra in (
        ("/forget", {"id": str(seeded.rent), "reason": "pwned"}),
        ("/correct", {"id": str(seeded.rent), "text": "pwned-by-cross-site"}),
        ("/erase", {"confirm": ALICE}),
        ("/retry", {"id": str(seeded.failed_job)}),
    ):
        response = client.post(path, data={"csrf": token, "u": ALICE, **extra}, headers=headers)
        assert response.status_code == 403, path
        assert "Cross-site request refused" in response.text
    assert rows(env, "SELECT status FROM beliefs WHERE id = %s", seeded.rent) == [("active",)]
    assert rows(env, "SELECT erased_at FROM memory_users WHERE user_id = %s", ALICE) == [(None,)]


@pytest.mark.parametrize(
    "headers",
    [GOOD, {"origin": BASE, "sec-fetch-site": "same-origin"}, {"referer": BASE + "/x"}, {}],
    ids=["origin", "fetch-metadata", "referer", "no-browser-headers"],
)
def test_the_browsers_own_forms_go_through(
    client: TestClient, seeded: Seeded, env: str, headers: dict[str, str]
) -> None:
    token = csrf_of(client.get(f"/belief?u={ALICE}&id={seeded.rent}").text)
    form = {"csrf": token, "u": ALICE, "id": str(seeded.rent), "reason": "moved"}
    assert client.post("/forget", data=form, headers=headers).status_code == 303
    assert rows(env, "SELECT status FROM beliefs WHERE id = %s", seeded.rent) == [("invalidated",)]


@pytest.fixture
def guarded(seeded: Seeded) -> Iterator[TestClient]:
    access = Access(token=TOKEN, hosts=None)
    with TestClient(
        create_app(access=access), base_url="http://memory.example", follow_redirects=False
    ) as c:
        yield c


def test_remote_mode_needs_the_token(guarded: TestClient) -> None:
    for path in ("/", f"/user?u={ALICE}", "/static/style.css", "/nowhere"):
        response = guarded.get(path)
        assert response.status_code == 401, path
        assert "Access token needed" in response.text
    assert guarded.get("/?token=wrong-token-0123456789").status_code == 401
    assert guarded.get("/", headers={"authorization": "Bearer nope"}).status_code == 401


def test_the_token_once_in_the_address_then_a_cookie(guarded: TestClient) -> None:
    response = guarded.get(f"/user?u={ALICE}&token={TOKEN}&all=1")
    assert response.status_code == 303
    assert response.headers["location"] == f"/user?u={ALICE}&all=1"  # the token is dropped
    cookie = response.headers["set-cookie"]
    assert cookie.startswith(f"{COOKIE}=") and "HttpOnly" in cookie and "SameSite=Strict" in cookie
    assert TOKEN not in cookie  # the cookie holds a digest, never the token
    page = guarded.get(f"/user?u={ALICE}&all=1")
    assert page.status_code == 200 and "Lives in San Francisco" in page.text
    assert TOKEN not in page.text


def test_a_bearer_header_works_too(seeded: Seeded) -> None:
    access = Access(token=TOKEN, hosts=None)
    with TestClient(create_app(access=access), base_url="http://memory.example") as c:
        response = c.get("/", headers={"authorization": f"Bearer {TOKEN}"})
        assert response.status_code == 200 and ALICE in response.text


async def test_dropping_the_token_never_redirects_to_another_site() -> None:
    # "//evil.com/" is a path to the server and another site to a browser: it was the
    # location the token's redirect gave.
    from mem01session.ui.security import Guard

    async def app(scope: Any, receive: Any, send: Any) -> None:
        raise AssertionError("the guard answers this request itself")

    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b""}

    scope = {
        "type": "http", "method": "GET", "path": "//evil.com/", "raw_path": b"//evil.com/",
        "query_string": f"token={TOKEN}".encode(), "headers": [(b"host", b"127.0.0.1")],
    }  # fmt: skip
    await Guard(app, Access(token=TOKEN, hosts=None))(scope, receive, send)
    [start] = [m for m in sent if m["type"] == "http.response.start"]
    assert start["status"] == 303
    assert dict(start["headers"])[b"location"] == b"/evil.com/"
