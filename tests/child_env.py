"""The PYTHONPATH of the Python processes tests start, and a stand-in that is not Python."""

from __future__ import annotations

import os
from pathlib import Path


def pythonpath(root: Path | str) -> str:
    """The checkout's ``src`` and ``root`` (so that the child can import ``tests``), then
    the caller's own PYTHONPATH, if any: a child runs this checkout's code, not whatever
    copy of the library is installed (an editable install of another checkout, say)."""
    own = os.environ.get("PYTHONPATH", "")
    return os.pathsep.join(p for p in (str(Path(root) / "src"), str(root), own) if p)


def not_python(folder: Path) -> str:
    """An executable that is not Python (as ``sys.executable`` is under some application
    servers): it exits at once with code 3."""
    path = folder / "not-python"
    path.write_text("#!/bin/sh\nexit 3\n")
    path.chmod(0o755)
    return str(path)
