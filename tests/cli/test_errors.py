"""Every command-line error is one line naming what was wrong, exit code 1, no traceback
(issue 14, finding 5), unless ``--debug`` asks for the traceback; no secret in the line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mem01session.cli import _errors, app
from mem01session.config import Settings
from mem01session.errors import ConfigError, DatabaseError

runner = CliRunner()


def one_error_line(output: str) -> str:
    """The output is exactly one line, ``error: ...``, and no traceback."""
    lines = [line for line in output.splitlines() if line.strip()]
    assert len(lines) == 1, output
    assert lines[0].startswith("error: "), output
    assert "Traceback" not in output
    return lines[0]


def fails(*args: str) -> str:
    result = runner.invoke(app, list(args))
    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    return one_error_line(result.output)


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No database URL, a scratch home: commands fail before any server starts."""
    for name in ("MEM01_DATABASE_URL", "DATABASE_URL", "MEM01_EMBEDDING_DIM"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MEM01_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("COLUMNS", raising=False)  # 80 columns: the line must not wrap
    return tmp_path


# -- bad environment ----------------------------------------------------------------------

COMMANDS = [
    ["db", "current"],
    ["db", "upgrade"],
    ["db", "downgrade", "base"],
    ["beliefs", "list", "--user", "alice"],
    ["erase", "--user", "alice", "--yes"],
    ["reinstate", "--user", "alice"],
    ["jobs", "list"],
]


@pytest.mark.parametrize("args", COMMANDS)
def test_url_with_a_bad_port(
    clean_env: Path, monkeypatch: pytest.MonkeyPatch, args: list[str]
) -> None:
    monkeypatch.setenv("MEM01_DATABASE_URL", "postgresql://u:pw@localhost:notaport/db")
    line = fails(*args)
    assert line == "error: MEM01_DATABASE_URL has an invalid port 'notaport': expected 1 to 65535"


def test_database_url_fallback_is_named(clean_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DATABASE_URL", "postgresql://u:pw@localhost:99999/db")
    assert fails("db", "current").startswith("error: DATABASE_URL has an invalid port '99999'")


@pytest.mark.parametrize("args", COMMANDS)
def test_password_with_an_unescaped_at(
    clean_env: Path, monkeypatch: pytest.MonkeyPatch, args: list[str]
) -> None:
    monkeypatch.setenv("MEM01_DATABASE_URL", "postgresql://mem01:S3cret@Passw0rd@127.0.0.1:1/mem01")
    line = fails(*args)
    assert "%40" in line
    assert "Passw0rd" not in line and "S3cret" not in line


@pytest.mark.parametrize("args", COMMANDS)
def test_home_is_a_file(clean_env: Path, monkeypatch: pytest.MonkeyPatch, args: list[str]) -> None:
    home = clean_env / "a-file"
    home.write_text("")
    monkeypatch.setenv("MEM01_HOME", str(home))
    assert fails(*args) == f"error: MEM01_HOME={home} is a file, not a folder"


@pytest.mark.parametrize(
    ("home", "reason"),
    [
        ("{tmp}/a-file/home", "cannot be created: a parent is a file"),
        ("/proc/mem01-home", "cannot be created"),  # root cannot create it either
        ("/proc", "is not writable"),
    ],
)
def test_home_that_cannot_be_used(
    clean_env: Path, monkeypatch: pytest.MonkeyPatch, home: str, reason: str
) -> None:
    (clean_env / "a-file").write_text("")
    path = home.format(tmp=clean_env)
    monkeypatch.setenv("MEM01_HOME", path)
    line = fails("db", "current")
    assert line.startswith(f"error: MEM01_HOME={path} {reason}"), line
    line = fails("beliefs", "list", "--user", "alice")
    assert line.startswith(f"error: MEM01_HOME={path} {reason}"), line


@pytest.mark.parametrize("value", ["abc", "0"])
def test_bad_embedding_dim(clean_env: Path, monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("MEM01_EMBEDDING_DIM", value)
    assert "MEM01_EMBEDDING_DIM must be" in fails("beliefs", "list", "--user", "alice")


def test_database_down_is_one_line_without_the_password(
    clean_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEM01_DATABASE_URL", "postgresql://u:pw@127.0.0.1:1/db")
    for args in (["db", "current"], ["db", "downgrade", "base"], ["reinstate", "--user", "a"]):
        line = fails(*args)
        assert "connect" in line or "Connection refused" in line, line
        assert ":pw@" not in line


# -- bad arguments --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["beliefs", "list"], "error: Missing option '--user' / '-u' (see: mem01session beliefs"),
        (["--bogus"], "error: No such option: --bogus (see: mem01session --help)"),
        (["jobs", "list", "--limit", "x"], "error: Invalid value for '--limit'"),
        (["nope"], "error: No such command 'nope'"),
        (["worker", "--concurrency", "0"], "error: --concurrency must be between 1 and 64, got 0"),
        (["worker", "--poll-interval", "0"], "error: --poll-interval must be between 0.05 and"),
    ],
)
def test_usage_errors_are_one_line_and_exit_1(args: list[str], expected: str) -> None:
    assert fails(*args).startswith(expected)


# -- the one handler ------------------------------------------------------------------------


def test_an_unexpected_exception_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    from mem01session.memory import schema

    def boom() -> None:
        raise RuntimeError("something\nunexpected")

    monkeypatch.setattr(schema, "migrations", boom)
    assert fails("db", "history") == "error: RuntimeError: something"


def test_a_reader_that_left_ends_the_command_without_an_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`mem01session export --user u | head` said "error: Broken pipe"."""
    from mem01session.memory import schema

    def gone() -> None:
        raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(schema, "migrations", gone)
    result = runner.invoke(app, ["db", "history"])
    assert result.exit_code == 141 and "error" not in result.output


def test_debug_lets_the_exception_through(monkeypatch: pytest.MonkeyPatch) -> None:
    from mem01session.memory import schema

    def boom() -> None:
        raise RuntimeError("something unexpected")

    monkeypatch.setattr(schema, "migrations", boom)
    result = runner.invoke(app, ["--debug", "db", "history"])
    assert result.exit_code == 1
    assert isinstance(result.exception, RuntimeError)


@pytest.mark.parametrize(
    ("exc", "line"),
    [
        (ConfigError("bad\n  value"), "bad value"),
        (FileExistsError(17, "File exists", "/x/y"), "/x/y: File exists"),
        (PermissionError(13, "Permission denied"), "Permission denied"),
        (ValueError("invalid literal for int()"), "ValueError: invalid literal for int()"),
        (DatabaseError("could not connect to 'postgresql://u:hunter22@h/db'"), "***"),
    ],
)
def test_describe(exc: BaseException, line: str) -> None:
    assert line in _errors.one_line(_errors.describe(exc))
    assert "hunter22" not in _errors.one_line(_errors.describe(exc))


def test_host_error_of_a_password_with_an_at_is_masked() -> None:
    """What libpq says about ``postgresql://mem01:S3cret@Passw0rd@127.0.0.1:1/mem01`` (the
    CLI refuses such a URL before connecting; a library caller still gets this text)."""
    with pytest.raises(ConfigError):  # refused, its password registered for masking
        Settings(database_url="postgresql://mem01:S3cret@Passw0rd@127.0.0.1:1/mem01")
    error = DatabaseError("failed to resolve host 'Passw0rd@127.0.0.1': Name or service unknown")
    assert "Passw0rd" not in _errors.one_line(_errors.describe(error))


def test_a_database_url_that_is_not_a_url_is_not_echoed(
    clean_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEM01_DATABASE_URL", "not a url at all S3cretPassw0rd")
    assert "S3cretPassw0rd" not in fails("db", "current")


# -- the real entry point, in a process of its own -----------------------------------------


def run_cli(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.endswith("DATABASE_URL")}
    environ.update(env)
    return subprocess.run(
        [sys.executable, "-m", "mem01session", *args],
        env=environ,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.slow
def test_entry_point_prints_one_line_and_debug_prints_the_traceback(tmp_path: Path) -> None:
    url = "postgresql://u:pw@localhost:notaport/db"
    plain = run_cli("db", "current", MEM01_DATABASE_URL=url)
    assert plain.returncode == 1 and plain.stdout == ""
    assert one_error_line(plain.stderr) == (
        "error: MEM01_DATABASE_URL has an invalid port 'notaport': expected 1 to 65535"
    )

    debug = run_cli("--debug", "db", "current", MEM01_DATABASE_URL=url)
    assert debug.returncode == 1
    assert "Traceback (most recent call last)" in debug.stderr
    assert "ConfigError: MEM01_DATABASE_URL has an invalid port" in debug.stderr
    assert ":pw@" not in debug.stderr

    home = tmp_path / "a-file"
    home.write_text("")
    as_file = run_cli("db", "downgrade", "nonsense", MEM01_HOME=str(home))
    assert as_file.returncode == 1
    assert one_error_line(as_file.stderr) == f"error: MEM01_HOME={home} is a file, not a folder"


@pytest.mark.parametrize(
    ("where", "expected"),
    [
        ("missing/x.json", "the folder {tmp}/missing does not exist"),
        ("", "is a folder; give a file path"),
    ],
)
def test_demo_refuses_an_unwritable_json_path_before_running(
    clean_env: Path, monkeypatch: pytest.MonkeyPatch, where: str, expected: str
) -> None:
    """Before anything starts (no server, no scenario): the path is checked first."""
    from mem01session.cli import _server

    def started(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("the demo started before checking --json")

    monkeypatch.setattr(_server, "database_url", started)
    path = clean_env / where
    line = fails("demo", "--json", str(path))
    assert line == f"error: --json {path}: " + expected.format(tmp=clean_env)


@pytest.mark.parametrize("zone", ["Mars/Olympus_Mons", "  "])
def test_an_mcp_timezone_that_is_not_one_is_one_line_naming_it(clean_env: Path, zone: str) -> None:
    line = fails("mcp", "--timezone", zone)
    assert line.startswith("error: --timezone must be an IANA time zone name such as")
