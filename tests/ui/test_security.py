"""Loopback by default, the access token when remote, the Host check, CSRF, headers."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from starlette.testclient import TestClient

from mem01session.errors import ConfigError
from mem01session.ui import Access, create_app
from mem01session.ui.security import COOKIE, check_bind, is_loopback

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
    assert response.headers["referrer-policy"] == "no-referrer"
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


def test_the_csrf_token_is_per_process(seeded: Seeded) -> None:
    first, second = Access(), Access()
    assert first.csrf != second.csrf and len(first.csrf) >= 32
    with TestClient(create_app(access=first), base_url=BASE) as c:
        assert csrf_of(c.get(f"/belief?u={ALICE}&id={seeded.rent}").text) == first.csrf


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
