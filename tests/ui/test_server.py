"""The command and the real server: refusals before anything opens, a busy port, an
unreachable database, secrets kept out of pages and logs."""

from __future__ import annotations

import logging
import socket
import urllib.error
import urllib.request

import pytest
from starlette.testclient import TestClient
from typer.testing import CliRunner

from mem01session import Memory
from mem01session.cli import app
from mem01session.config import Settings
from mem01session.embeddings import HashingEmbedder
from mem01session.secrets.redaction import register_secret
from mem01session.serving import _RedactArgs
from mem01session.ui import create_app
from tests.conftest import TEST_DIM

from .conftest import BASE
from .live import live_browser
from .seed import ALICE, Seeded

runner = CliRunner()
SENTINEL = "ui-SENTINEL-pw"
TOKEN = "live-token-0123456789abcdef"


def failed(*args: str) -> str:
    result = runner.invoke(app, ["ui", *args])
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    [line] = [line for line in result.output.splitlines() if line.strip()]
    assert line.startswith("error: ")
    return line


def test_a_remote_host_is_refused_before_anything_opens() -> None:
    assert "refusing to serve on '0.0.0.0'" in failed("--host", "0.0.0.0")
    assert "needs an access token" in failed("--host", "0.0.0.0", "--allow-remote")
    assert "at least 16 characters" in failed("--allow-remote", "--token", "abc")
    assert "--port must be between 0 and 65535" in failed("--port", "70000")


def test_a_busy_port_is_a_clean_error() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        line = failed("--port", str(port))
    assert line.startswith(f"error: cannot listen on 127.0.0.1:{port}:")


def test_an_unreachable_database_never_shows_the_password(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MEM01_DATABASE_URL", f"postgresql://u:{SENTINEL}@127.0.0.1:1/x")
    monkeypatch.setenv("MEM01_EMBEDDING_MODEL", HashingEmbedder(TEST_DIM).name)
    result = runner.invoke(app, ["ui", "--port", "0"])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert "cannot connect to the database at postgresql://u:***@127.0.0.1:1/x" in result.output
    assert SENTINEL not in result.output


def test_a_database_outage_is_a_503_page_without_the_password(
    caplog: pytest.LogCaptureFixture,
) -> None:
    settings = Settings(
        database_url=f"postgresql://u:{SENTINEL}@127.0.0.1:1/x", embedding_dim=TEST_DIM
    )
    with TestClient(create_app(memory=Memory(settings)), base_url=BASE) as client:
        response = client.get("/")
    assert response.status_code == 503 and "Database unavailable" in response.text
    assert "u:***@127.0.0.1:1/x" in response.text
    assert SENTINEL not in response.text and SENTINEL not in caplog.text


def test_access_log_lines_are_scrubbed() -> None:
    register_secret(TOKEN)
    record = logging.LogRecord(
        "uvicorn.access",
        logging.INFO,
        __file__,
        1,
        '%s - "%s %s HTTP/%s" %d',
        ("127.0.0.1:5", "GET", f"/?token={TOKEN}", "1.1", 303),
        None,
    )
    assert _RedactArgs().filter(record)
    assert record.args == ("127.0.0.1:5", "GET", "/?token=***", "1.1", 303)


def test_the_real_server_answers_over_http(seeded: Seeded) -> None:
    with live_browser(token=TOKEN) as server:
        assert server.url.startswith("http://127.0.0.1:") and server.port > 0
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(server.url, timeout=10)
        assert refused.value.code == 401
        request = urllib.request.Request(
            server.url + f"user?u={ALICE}", headers={"Authorization": f"Bearer {TOKEN}"}
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            page = response.read().decode()
            assert response.headers["x-frame-options"] == "DENY"
            assert "server" not in response.headers
        assert "Lives in San Francisco" in page


def test_the_command_has_help_with_an_example() -> None:
    result = runner.invoke(app, ["ui", "--help"])
    assert result.exit_code == 0
    text = " ".join(result.output.split())
    assert "Example: mem01session ui" in text and "--allow-remote" in text
