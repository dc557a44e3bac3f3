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
from urllib.parse import urlsplit

from ..errors import ConfigError

if TYPE_CHECKING:
    from ..config import Settings


def load_settings() -> Settings:
    """``Settings.from_env()``, with the database URL or the data folder checked."""
    from ..config import Settings

    settings = Settings.from_env()
    if settings.database_url:
        check_database_url(settings.database_url, _url_variable())
    else:
        check_home(settings.home)
    return settings


def database_url(settings: Settings) -> tuple[str, bool]:
    """The configured URL, or the embedded server's (started if needed); and whether it is
    the embedded one."""
    if settings.database_url:
        return settings.database_url, False
    from ..db.embedded import embedded_url

    return embedded_url(settings.home), True


def _url_variable() -> str:
    """Which variable the URL came from (``Settings`` falls back to ``DATABASE_URL``)."""
    if os.environ.get("MEM01_DATABASE_URL", "").strip():
        return "MEM01_DATABASE_URL"
    return "DATABASE_URL"


def check_database_url(url: str, variable: str = "MEM01_DATABASE_URL") -> None:
    """Refuse a URL that libpq would misread. The messages never quote the URL's user
    information, so no part of a password can show."""
    try:
        netloc = urlsplit(url).netloc
    except ValueError as exc:  # e.g. an unclosed IPv6 bracket
        raise ConfigError(f"{variable} is not a valid URL: {exc}") from None
    if netloc.count("@") > 1:
        raise ConfigError(
            f"{variable} has more than one '@' before the host name; write an '@' inside "
            "the user name or password as %40"
        )
    host = netloc.rpartition("@")[2]
    port = (host.rpartition("]")[2] if host.startswith("[") else host).partition(":")[2]
    if port and not (port.isascii() and port.isdigit() and 0 < int(port) < 65536):
        raise ConfigError(f"{variable} has an invalid port {port!r}: expected 1 to 65535")


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
        home.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        reason = "a parent is a file" if exc.errno == errno.ENOTDIR else exc.strerror
        raise ConfigError(f"{where} cannot be created: {reason}") from None
    try:
        with tempfile.TemporaryFile(dir=home):
            pass
    except OSError as exc:
        raise ConfigError(f"{where} is not writable: {exc.strerror}") from None
