"""``mem01session mcp --transport http``: the memory browser's network rules (loopback by
default, loopback ``Host`` names only, a token for anything else) and a real round trip."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from agents.mcp import MCPServerStreamableHttp
from starlette.responses import PlainTextResponse
from starlette.testclient import TestClient
from starlette.types import Receive, Scope, Send
from typer.testing import CliRunner

import mem01session
from mem01session import Memory
from mem01session.cli import app
from mem01session.config import Settings
from mem01session.embeddings import HashingEmbedder
from mem01session.engine import BeliefEngine
from mem01session.errors import ConfigError
from mem01session.tools.mcp_server import HttpGuard, HttpServer, build_server, check_http_bind
from tests.cli.test_startup import loaded_after
from tests.conftest import TEST_DIM

TOKEN = "mcp-token-0123456789abcdef"
runner = CliRunner()


def failed(*args: str) -> str:
    result = runner.invoke(app, ["mcp", *args])
    assert result.exit_code == 1, result.output
    [line] = [line for line in result.output.splitlines() if line.strip()]
    assert line.startswith("error: ") and "Traceback" not in result.output
    return line


def test_other_hosts_are_refused_without_a_token_before_anything_opens() -> None:
    line = failed("--transport", "http", "--host", "0.0.0.0")
    assert "refusing to serve MCP on '0.0.0.0'" in line and "--token" in line
    assert "at least 16 characters" in failed("--transport", "http", "--token", "short")
    blank = failed("--transport", "http", "--token", " " * 16)  # guards nothing
    assert "must not hold spaces" in blank
    assert "must not hold spaces" in failed("--transport", "http", "--token", TOKEN + "\t")
    assert "--transport must be stdio or http" in failed("--transport", "pigeon")
    assert "--port must be between 0 and 65535" in failed("--transport", "http", "--port", "-1")
    check_http_bind("127.0.0.1", None)
    check_http_bind("::1", None)
    check_http_bind("0.0.0.0", TOKEN)  # another address is served when a token guards it
    with pytest.raises(ConfigError):
        check_http_bind("192.0.2.7", None)


async def _ok(scope: Scope, receive: Receive, send: Send) -> None:
    await PlainTextResponse("inside")(scope, receive, send)


def test_the_guard_checks_the_host_and_the_token() -> None:
    loopback = frozenset({"localhost", "127.0.0.1", "::1"})
    open_door = TestClient(HttpGuard(_ok, hosts=loopback, token=None), base_url="http://127.0.0.1")
    assert open_door.get("/mcp").text == "inside"
    rebound = open_door.get("/mcp", headers={"host": "evil.example:8702"})
    assert rebound.status_code == 421 and "inside" not in rebound.text

    guarded = TestClient(HttpGuard(_ok, hosts=None, token=TOKEN), base_url="http://mem.example")
    assert guarded.get("/mcp").status_code == 401
    assert guarded.get("/mcp", headers={"authorization": "Bearer wrong-token"}).status_code == 401
    ok = guarded.get("/mcp", headers={"authorization": f"Bearer {TOKEN}"})
    assert ok.status_code == 200 and ok.text == "inside"


@pytest.fixture
async def live(db_url: str, tmp_path: Path) -> AsyncIterator[HttpServer]:
    settings = Settings.from_env(
        {
            "MEM01_DATABASE_URL": db_url,
            "MEM01_EMBEDDING_MODEL": HashingEmbedder(TEST_DIM).name,
            "MEM01_HOME": str(tmp_path),
        }
    )
    server = HttpServer(settings, user_id="hal", port=0, token=TOKEN)
    serving = asyncio.ensure_future(server.serve())
    async with asyncio.timeout(60):  # a guard against a hang
        await asyncio.wait(
            [serving, asyncio.ensure_future(server.ready.wait())], return_when="FIRST_COMPLETED"
        )
    if serving.done():
        serving.result()  # it failed to start: say why
    yield server
    server.stop()
    await serving


def client(server: HttpServer, **headers: str) -> MCPServerStreamableHttp:
    params: Any = {"url": server.url, "headers": headers}
    return MCPServerStreamableHttp(
        params=params, client_session_timeout_seconds=60, max_retry_attempts=0
    )


async def test_a_round_trip_over_http(live: HttpServer, engine: BeliefEngine) -> None:
    async with client(live, authorization=f"Bearer {TOKEN}") as server:
        stored = await server.call_tool("remember", {"statement": "Plays the cello"})
        assert not stored.is_error
        found = await server.call_tool("search_memory", {"query": "cello"})
        assert "Plays the cello" in found.content[0].text
    assert [b.content for b in await engine.history("hal")] == ["Plays the cello"]

    # Without the token, or under another host name, nothing gets in.
    assert await asyncio.to_thread(status, live.url) == 401
    assert await asyncio.to_thread(status, live.url, host="evil.example") == 421


def status(url: str, **headers: str) -> int:
    body = b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}'
    request = urllib.request.Request(
        url, data=body, headers={"content-type": "application/json", **headers}
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return exc.code


@pytest.mark.slow
def test_mcp_help_loads_neither_mcp_nor_the_database() -> None:
    # What tests/cli/test_startup.py calls heavy (drivers, Alembic, the SDK), then mcp itself.
    assert loaded_after(["mcp", "--help"]) == []
    code = (
        "import sys, atexit; sys.argv = ['m', 'mcp', '--help']\n"
        "atexit.register(lambda: print(sorted(m for m in sys.modules "
        "if m.split('.')[0] in ('mcp', 'uvicorn'))))\n"
        "from mem01session.cli import main\nmain()\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == "[]"
    assert "--transport" in proc.stdout and "--user" in proc.stdout


def test_a_desktop_clients_config_names_the_full_command_and_hides_the_password(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MEM01_DATABASE_URL", "postgresql://mem01:s3cret-pw@db.example/mem01")
    result = runner.invoke(app, ["mcp", "--user", "alice", "--print-config"])
    assert result.exit_code == 0, result.output
    server = json.loads(result.output)["mcpServers"]["memory"]
    assert server["command"] == sys.executable  # a GUI app's PATH has no venv
    assert server["args"] == ["-m", "mem01session", "mcp", "--user", "alice"]
    assert server["env"]["MEM01_DATABASE_URL"] == "postgresql://mem01:***@db.example/mem01"
    assert "s3cret-pw" not in result.output


def test_the_server_says_its_version() -> None:
    # MCP clients show it (it was empty).
    assert build_server(Memory(Settings()), user_id="ana").version == mem01session.__version__
