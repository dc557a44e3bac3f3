"""Settings for a command, checked before anything connects or starts a server.

:func:`load_settings` reads the environment once and refuses, with a message naming the
variable, what would otherwise fail deep inside a driver or ``mkdir``: a database URL
whose port is not a number or whose password holds an unescaped ``@`` (libpq would read
part of the password as the host name and print it), and a data folder that is a file,
cannot be created or cannot be written.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..private import data_folder

if TYPE_CHECKING:
    from ..config import Settings


def load_settings() -> Settings:
    """``Settings.from_env()``, with the database URL or the data folder checked."""
    from ..config import Settings

    settings = Settings.from_env()  # a malformed database URL is refused here
    if not settings.database_url:
        data_folder(settings.home)
    return settings
