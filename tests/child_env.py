"""The PYTHONPATH of the Python processes tests start."""

from __future__ import annotations

import os
from pathlib import Path


def pythonpath(root: Path | str) -> str:
    """``root`` (so that the child can import ``tests``) after the caller's own
    PYTHONPATH, if any: a checkout tested with ``PYTHONPATH=src`` has its children run that
    code too, not whatever copy of the library is installed."""
    own = os.environ.get("PYTHONPATH", "")
    return os.pathsep.join(p for p in (own, str(root)) if p)
