"""The PYTHONPATH of the Python processes tests start."""

from __future__ import annotations

import os
from pathlib import Path


def pythonpath(root: Path | str) -> str:
    """The checkout's ``src`` and ``root`` (so that the child can import ``tests``), then
    the caller's own PYTHONPATH, if any: a child runs this checkout's code, not whatever
    copy of the library is installed (an editable install of another checkout, say)."""
    own = os.environ.get("PYTHONPATH", "")
    return os.pathsep.join(p for p in (str(Path(root) / "src"), str(root), own) if p)
