"""``mem01session ui``: the memory browser, a local web page over the configured database."""

from __future__ import annotations

from typing import Annotated

import typer

from ._console import console
from ._errors import fail


def ui(
    host: Annotated[
        str, typer.Option("--host", help="Address to listen on (loopback unless --allow-remote).")
    ] = "127.0.0.1",
    port: Annotated[
        int, typer.Option("--port", help="Port to listen on (0: any free port).")
    ] = 8701,
    allow_remote: Annotated[
        bool,
        typer.Option("--allow-remote", help="Allow a non-loopback --host; needs --token as well."),
    ] = False,
    token: Annotated[
        str | None,
        typer.Option(
            "--token",
            envvar="MEM01_UI_TOKEN",
            show_envvar=True,
            help="Access token every request must carry (at least 16 characters).",
        ),
    ] = None,
) -> None:
    """Browse, search and correct what is remembered about each user, in a web page.

    Shows users, their beliefs with history and provenance, what a query would recall,
    and their extraction jobs; corrects, forgets and erases through the engine (recorded
    as "inspector"). Listens on 127.0.0.1 by default; every form carries a CSRF token.

    Example: mem01session ui --port 8701
    """
    if not 0 <= port <= 65535:
        fail(f"--port must be between 0 and 65535, got {port}")
    from ._console import err_console

    if err_console().is_terminal:  # a person waiting: loading the web stack takes a second
        err_console().print("starting the memory browser", highlight=False, markup=False)
    # Imported here: the web stack loads only for this command. Any other error becomes
    # one line through the command line's handler.
    import asyncio
    import contextlib

    from rich.text import Text

    from ..ui.server import BrowserServer
    from ._server import database_url
    from ._settings import load_settings

    settings = load_settings()
    try:
        server = BrowserServer(
            settings, host=host, port=port, allow_remote=allow_remote, token=token
        )
    except OSError as exc:
        fail(f"cannot listen on {host}:{port}: {exc.strerror or exc}")
    try:
        database_url(settings)  # the embedded server started now (held while this runs)
    except BaseException:
        server.socket.close()
        raise
    line = Text(f"memory browser on {server.url}")
    if token is not None:
        line.append(" (append ?token=<your token> once; a cookie keeps you in)")
    line.append("; Ctrl+C stops it")
    console().print(line)
    with contextlib.suppress(KeyboardInterrupt):  # Ctrl+C: a normal way to stop it
        asyncio.run(server.serve())
