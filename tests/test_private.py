"""What the library writes is for its owner only: folders 0700 (0711 run as root, so that
the embedded server's own user can pass), files 0600; an existing one others could read
is tightened, and a warning says so."""

from __future__ import annotations

import logging
import os
import stat
import sys
from pathlib import Path

import pytest

from mem01session.errors import ConfigError
from mem01session.private import (
    FILE_MODE,
    data_folder,
    folder_mode,
    private_file,
    private_folder,
)

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX modes")


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_new_folders_and_files_are_private(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING):
        folder = private_folder(tmp_path / "home" / "deeper")
    assert mode(folder) == folder_mode()
    assert caplog.records == []  # made so: nothing to warn about
    made = private_file(folder / "transcripts.sqlite")
    assert mode(made) == FILE_MODE and made.read_bytes() == b""


def test_what_others_could_read_is_tightened_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    home = tmp_path / "home"
    home.mkdir(mode=0o755)
    os.chmod(home, 0o755)
    store = home / "transcripts.sqlite"
    store.write_text("data")
    os.chmod(store, 0o644)
    wal = home / "transcripts.sqlite-wal"
    wal.write_text("log")
    os.chmod(wal, 0o644)
    with caplog.at_level(logging.WARNING):
        private_folder(home)
        private_file(store)
    assert mode(home) == folder_mode()
    assert mode(store) == FILE_MODE and mode(wal) == FILE_MODE  # and what SQLite keeps beside
    assert store.read_text() == "data"  # contents untouched
    warned = [r.getMessage() for r in caplog.records]
    assert any(str(home) in w and "made it private" in w for w in warned)
    assert any(str(store) in w for w in warned)
    caplog.clear()
    private_file(store)  # already private: nothing to say
    assert caplog.records == []


def test_a_data_folder_that_is_a_file_or_under_one_is_refused_by_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A session over the default transcript store made it there: a raw FileExistsError."""
    from mem01session import Mem01Session, Memory, Settings

    a_file = tmp_path / "file"
    a_file.write_text("x")
    monkeypatch.setenv("MEM01_HOME", str(a_file))
    with pytest.raises(ConfigError, match=r"MEM01_HOME=.*file is a file, not a folder"):
        data_folder(a_file)
    with pytest.raises(ConfigError, match="cannot be created: a parent is a file"):
        data_folder(a_file / "home")
    memory = Memory(Settings(database_url="postgresql://u@h/db", home=a_file))
    with pytest.raises(ConfigError, match="is a file, not a folder"):
        Mem01Session("c1", "u1", memory=memory)
    assert data_folder(tmp_path / "new") == tmp_path / "new"
