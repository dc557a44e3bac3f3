"""Settings for a command, checked before anything connects or starts a server.

:func:`load_settings` reads the environment once and refuses, with a message naming the
variable, what would otherwise fail deep inside a driver or ``mkdir``: a database URL
whose port is not a number or whose password holds an unescaped ``@`` (libpq would read
part of the password as the host name and print it), and a data folder that is a file,
cannot be created or cannot be written.
"""

from __future__ import annotations

import errno
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import ConfigError
from ..private import private_folder

if TYPE_CHECKING:
    from ..config import Settings


def load_settings() -> Settings:
    """``Settings.from_env()``, with the database URL or the data folder checked."""
    from ..config import Settings

    settings = Settings.from_env()  # a malformed database URL is refused here
    if not settings.database_url:
        check_home(settings.home)
    return settings


def check_home(home: Path) -> None:
    """Refuse a data folder that is a file, cannot be created or cannot be written."""
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
