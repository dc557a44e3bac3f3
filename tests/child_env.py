"""The PYTHONPATH of the Python processes tests start; a stand-in that is not Python; waiting
for a process that is not the test's child to end."""

from __future__ import annotations

import concurrent.futures
import os
import select
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


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


def ended(pid: int, timeout: float = 60) -> bool:
    """True once process ``pid`` has exited (a pidfd: woken by its exit, not polled)."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        readable, _, _ = select.select([fd], [], [], timeout)
        return bool(readable)
    finally:
        os.close(fd)


def fork_exit_code(pid: int, timeout: float = 30) -> int:
    """The exit code of the forked child ``pid``; a child still running after ``timeout``
    seconds (hung on something it inherited) is killed, and TimeoutError raised."""
    with concurrent.futures.ThreadPoolExecutor(1) as reaper:
        reaped = reaper.submit(os.waitpid, pid, 0)
        try:
            _, status = reaped.result(timeout)
        except TimeoutError:
            os.kill(pid, signal.SIGKILL)  # the reaper thread then collects it
            raise
    return os.waitstatus_to_exitcode(status)


def wait_for(
    condition: Callable[[], bool], child: subprocess.Popen[Any], timeout: float = 120
) -> None:
    """Until ``condition()`` holds (a state the test reads, such as rows in a table), while
    ``child`` (the process expected to bring it about) is still running."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert child.poll() is None, child.communicate()
        assert time.monotonic() < deadline, "the state waited for never came"
