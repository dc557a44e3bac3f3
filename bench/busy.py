"""Background CPU load for the benchmarks: busy-looping processes, bounded in time."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time
from collections.abc import Iterator

HOGS = 2
HOG_LIMIT_SECONDS = 900.0  # a busy process ends by itself after this, whatever happens

HOG = "import sys, time\nend = time.monotonic() + float(sys.argv[1])\nwhile time.monotonic() < end:\n    pass\n"  # noqa: E501


@contextlib.contextmanager
def busy(processes: int = HOGS, limit: float = HOG_LIMIT_SECONDS) -> Iterator[None]:
    """``processes`` busy loops, each ending by itself after ``limit`` seconds at most and
    ended (by its own pid) when the block ends."""
    hogs = [subprocess.Popen([sys.executable, "-c", HOG, str(limit)]) for _ in range(processes)]
    try:
        time.sleep(0.5)  # they are spinning before anything is timed
        yield
    finally:
        for hog in hogs:
            hog.kill()
        for hog in hogs:
            hog.wait(30)
