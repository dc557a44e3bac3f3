"""``mem01session mcp``: the memory tools over MCP, for any MCP client."""

from __future__ import annotations

from typing import Annotated

import typer

from ._errors import fail

TRANSPORTS = ("stdio", "http")


def mcp(
    user: Annotated[
        str | None,
        typer.Option(
            "--user",
            "-u",
            help="Serve this user's memory only; without it each call names its user (user_id).",
        ),
    ] = None,
    transport: Annotated[
        str, typer.Option("--transport", help="stdio (the client starts this command) or http.")
    ] = "stdio",
    host: Annotated[
        str, typer.Option("--host", help="http: address to listen on (loopback unless --token).")
    ] = "127.0.0.1",
    port: Annotated[
        int, typer.Option("--port", help="http: port to listen on (0: any free port).")
    ] = 8702,
    token: Annotated[
        str | None,
        typer.Option(
            "--token",
            envvar="MEM01_MCP_TOKEN",
            show_envvar=True,
            help="http: access token every request must carry as a bearer token (16+ chars).",
        ),
    ] = None,
    timezone: Annotated[
        str | None,
        typer.Option(
            "--timezone",
            help="The user's IANA time zone (Europe/Lisbon): the days a search's dates are, "
            "for every user (default: each user's recorded zone, else UTC).",
        ),
    ] = None,
    print_config: Annotated[
        bool,
        typer.Option(
            "--print-config",
            help="Print a desktop client's config for this server (the command's full path, "
            "which a GUI app's PATH may not have) and exit.",
        ),
    ] = False,
) -> None:
    """Serve search_memory, remember, correct_memory and forget_memory over MCP.

    One memory for Claude Desktop, Cursor, an Agents SDK agent (MCPServerStdio) or any MCP
    client, through the same engine as the library (recorded as "mcp-tool"). stdio by
    default: nothing but the protocol is written to stdout. --transport http serves
    streamable HTTP at /mcp on 127.0.0.1; another address needs --token.

    Example: mem01session mcp --user alice --print-config
    """
    if print_config:
        typer.echo(desktop_config(user, timezone))
        return
    if transport not in TRANSPORTS:
        fail(f"--transport must be stdio or http, got {transport!r}")
    if not 0 <= port <= 65535:
        fail(f"--port must be between 0 and 65535, got {port}")
    # Imported here: the MCP and database stacks load only for this command. Any other
    # error becomes one line through the command line's handler.
    import asyncio
    import contextlib

    from ..checks import check_id, check_timezone
    from ._settings import load_settings

    if user is not None:
        check_id("--user", user)
    if timezone is not None:
        check_timezone("--timezone", timezone)
    settings = load_settings()
    if transport == "stdio":
        from ..tools.mcp_server import serve_stdio

        with contextlib.suppress(KeyboardInterrupt):
            asyncio.run(serve_stdio(settings, user_id=user, timezone=timezone))
        return

    from rich.text import Text

    from ..tools.mcp_server import HttpServer
    from ._console import console

    try:
        server = HttpServer(
            settings, user_id=user, host=host, port=port, token=token, timezone=timezone
        )
    except OSError as exc:
        fail(f"cannot listen on {host}:{port}: {exc.strerror or exc}")
    line = Text(f"MCP server (streamable HTTP) on {server.url}")
    if token is not None:
        line.append(" (send Authorization: Bearer <your token>)")
    line.append("; Ctrl+C stops it")
    console().print(line)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(server.serve())


def desktop_config(user: str | None, timezone: str | None) -> str:
    """A desktop MCP client's config (Claude Desktop's ``claude_desktop_config.json``,
    Cursor's ``mcp.json``) that starts this server with this environment's Python: by full
    path, since a GUI app does not read the shell's PATH."""
    import json
    import os
    import sys

    from ..secrets.redaction import redact

    args = ["-m", "mem01session", "mcp"]
    args += ["--user", user] if user else []
    args += ["--timezone", timezone] if timezone else []
    # The database password is not printed: the client's config needs it put back in.
    env = {
        k: redact(os.environ[k]) for k in ("MEM01_HOME", "MEM01_DATABASE_URL") if os.environ.get(k)
    }
    server: dict[str, object] = {"command": sys.executable, "args": args}
    if env:
        server["env"] = env
    return json.dumps({"mcpServers": {"memory": server}}, indent=2)
