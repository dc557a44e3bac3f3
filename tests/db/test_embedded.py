"""With nothing configured the CLI starts the embedded server under MEM01_HOME."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from mem01session.db import migrate


@pytest.fixture
def home() -> Iterator[Path]:
    folder = Path(tempfile.mkdtemp(prefix="mem01-home-"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _cli(home: Path, *args: str) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("MEM01_DATABASE_URL", "DATABASE_URL")}
    env["MEM01_HOME"] = str(home)
    return subprocess.Popen(
        [sys.executable, "-m", "mem01session", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.slow
def test_two_processes_start_and_migrate_one_embedded_server(home: Path) -> None:
    procs = [_cli(home, "db", "upgrade") for _ in range(2)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs

    current = _cli(home, "db", "current")
    out, err = current.communicate(timeout=120)
    assert current.returncode == 0, err
    assert out.strip() == f"{migrate.head_revision()} (head)"
    assert (home / "pg" / "PG_VERSION").is_file()
    # The process that started the server stopped it at exit.
    assert not (home / "pg" / "postmaster.pid").exists()


def _run(home: Path, *args: str) -> tuple[int, str, str]:
    proc = _cli(home, *args)
    out, err = proc.communicate(timeout=120)
    return proc.returncode, out, err


@pytest.mark.slow
def test_db_start_keeps_the_server_for_the_commands_that_follow(home: Path) -> None:
    pg = home.resolve() / "pg"
    code, out, _ = _run(home, "db", "status")
    assert code == 1 and out.startswith(f"embedded PostgreSQL in {pg}: not running")

    code, out, err = _run(home, "db", "start")
    assert code == 0, err
    assert err.startswith(
        f"starting the embedded PostgreSQL in {pg} (kept running until mem01session db stop)"
    ), err
    head = migrate.head_revision()
    kept = f"kept running; its database is at {head} (head)"
    assert out.strip() == f"embedded PostgreSQL in {pg}: {kept}"
    assert (pg / "postmaster.pid").exists()  # still running after the command exited

    # A later command reuses it: no start, no notice, and it leaves it running.
    code, out, err = _run(home, "db", "current")
    assert code == 0 and "starting" not in err, err
    assert out.strip() == f"{head} (head)"
    code, out, _ = _run(home, "db", "status")
    assert code == 0 and "kept running" in out and "processes using it: none" in out

    code, out, _ = _run(home, "db", "start")
    assert code == 0 and ": already kept running; its database is at " in out
    code, out, err = _run(home, "db", "url")
    assert code == 0 and "(the embedded server in MEM01_HOME; kept running until" in err, err

    code, out, err = _run(home, "db", "stop")
    assert code == 0, err
    assert out.strip() == f"embedded PostgreSQL in {pg}: stopped"
    assert not (pg / "postmaster.pid").exists()
    code, out, err = _run(home, "db", "stop")
    assert code == 0 and out.strip().endswith(": not running")
    # Stopping it left the home private (run as root, the wheel opens it for its user).
    assert "could be read by other users" not in err


def test_db_start_is_about_the_embedded_server_only(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner

    from mem01session.cli import app

    monkeypatch.setenv("MEM01_DATABASE_URL", "postgresql://u:pw@127.0.0.1:1/x")
    for action in ("start", "stop", "status"):
        result = CliRunner().invoke(app, ["db", action])
        assert result.exit_code == 1
        assert result.output.startswith(
            "error: MEM01_DATABASE_URL is set, so the commands use that server; "
            f"`db {action}` is about the embedded one"
        )


@pytest.mark.slow
def test_a_command_leaves_running_a_server_it_did_not_start(home: Path) -> None:
    # A server left running by a process gone (an application between runs, say), held by
    # no one: `db url` reuses it, and a psql opened from its URL keeps it after it exits.
    orphan = (
        "import sys; from pathlib import Path; "
        "from mem01session.db.embedded import embedded_url; "
        "embedded_url(Path(sys.argv[1]), stop_on_exit=False)"
    )
    subprocess.run([sys.executable, "-c", orphan, str(home)], check=True, timeout=120)
    pg = home.resolve() / "pg"
    assert (pg / "postmaster.pid").exists()
    try:
        code, out, err = _run(home, "db", "url")
        assert code == 0 and out.startswith("postgresql://") and "starting" not in err, err
        assert (pg / "postmaster.pid").exists()  # before: the last holder stopped it
    finally:
        _run(home, "db", "stop")
    assert not (pg / "postmaster.pid").exists()


_HOLD = (
    "import sys\n"
    "from pathlib import Path\n"
    "from mem01session.db.embedded import embedded_url\n"
    "embedded_url(Path(sys.argv[1]))\n"
    "print('ready', flush=True)\n"
    "sys.stdin.read()\n"  # until the test closes it: then all exit at once
)


@pytest.mark.slow
def test_processes_that_exit_together_stop_the_server_they_shared(home: Path) -> None:
    """The workers of one application server stop together; the last of them stops the
    embedded server (their releases are serialized, so one of them sees it is the last)."""
    env = {k: v for k, v in os.environ.items() if k not in ("MEM01_DATABASE_URL", "DATABASE_URL")}
    holders = [
        subprocess.Popen(
            [sys.executable, "-c", _HOLD, str(home)],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    for holder in holders:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
    assert (home / "pg" / "postmaster.pid").exists()
    for holder in holders:
        assert holder.stdin is not None
        holder.stdin.close()
    assert [h.wait(timeout=120) for h in holders] == [0, 0, 0, 0]
    assert not (home / "pg" / "postmaster.pid").exists()


_OPEN_CLOSE_THEN_WAIT = (
    "import asyncio, sys\n"
    "from pathlib import Path\n"
    "from mem01session.db import Database\n"
    "async def main():\n"
    "    db = await Database.open(home=Path(sys.argv[1]), embedding_model='m', embedding_dim=3)\n"
    "    await db.close()\n"
    "asyncio.run(main())\n"
    "print('closed', flush=True)\n"
    "sys.stdin.read()\n"  # alive, its exit handlers not run yet
)


@pytest.mark.slow
def test_closing_the_last_database_lets_go_of_the_server_before_the_process_exits(
    home: Path,
) -> None:
    """Some processes never run their exit handlers (the workers of ``uvicorn --workers``):
    the server is let go of when the database closes, and the last holder stops it."""
    env = {k: v for k, v in os.environ.items() if k not in ("MEM01_DATABASE_URL", "DATABASE_URL")}

    def start(code: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, "-c", code, str(home)],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    holder = start(_HOLD)  # another process using the server meanwhile
    closer = start(_OPEN_CLOSE_THEN_WAIT)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        assert closer.stdout is not None and closer.stdout.readline().strip() == "closed"
        assert (home / "pg" / "postmaster.pid").exists()  # the holder still uses it
        assert holder.stdin is not None
        holder.stdin.close()
        assert holder.wait(timeout=120) == 0
        assert not (home / "pg" / "postmaster.pid").exists()
        alone = start(_OPEN_CLOSE_THEN_WAIT)  # alone: closing stops the server at once
        assert alone.stdout is not None and alone.stdout.readline().strip() == "closed"
        assert not (home / "pg" / "postmaster.pid").exists()
        assert alone.stdin is not None
        alone.stdin.close()
        assert alone.wait(timeout=120) == 0
    finally:
        for process in (holder, closer):
            if process.poll() is None:
                process.kill()
                process.wait()
