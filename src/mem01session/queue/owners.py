"""Who holds a claim: worker ids that name their process, so that a dead one can be told.

A worker leases jobs under its id (``lease_owner``). A process that stops cleanly hands
its claims back; one killed outright (``kill -9``, the OOM killer, a power cut of a
container) cannot, and its claims used to wait for their lease to end (120 s) while the
user's later turns queued behind them. So the id says which process holds the claim:

    ``<pid>@<host>:<scope>:<started>-<tag>``   e.g. ``4242@web-1:3f9c0a7d12e4:88231907-5be0c1aa``

* ``pid`` and ``host`` (the machine's name, for people reading ``jobs list``);
* ``scope``: within what pids can be compared: a digest of the host name, the boot
  (Linux's ``boot_id``) and the pid namespace (a container has its own), so that a pid is
  only ever looked up where it means the same process;
* ``started``: when that process started (clock ticks since boot on Linux, milliseconds
  since the epoch elsewhere): a pid the system gave to a later process has another start;
* ``tag``: one per worker object.

:func:`gone` is true when the process named is certainly not running any more: same scope,
and no process with that pid, or one that started at another time, or a zombie. Another
machine's (or container's) process cannot be judged from here: its claims still wait for
their lease. An id of another shape (older versions wrote ``<pid>-<tag>``) is never judged.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import socket
import sys
import uuid
from dataclasses import dataclass

import psutil

_ID = re.compile(
    r"^(?P<pid>\d{1,10})@(?P<host>[A-Za-z0-9.-]{1,63}):(?P<scope>[0-9a-f]{12}):"
    r"(?P<started>\d{1,20})-(?P<tag>[0-9a-f]{1,32})$"
)
_LINUX = sys.platform.startswith("linux")
_HIDDEN = -1  # a process that exists but may not be looked at: alive, as far as we know


@dataclass(frozen=True)
class Owner:
    """A worker id, read."""

    pid: int
    host: str
    scope: str
    started: int
    tag: str

    def __str__(self) -> str:
        return f"{self.pid}@{self.host}:{self.scope}:{self.started}-{self.tag}"


def parse(owner_id: str) -> Owner | None:
    """The parts of ``owner_id``; None for an id of another shape."""
    match = _ID.match(owner_id)
    if match is None:
        return None
    return Owner(
        int(match["pid"]), match["host"], match["scope"], int(match["started"]), match["tag"]
    )


def new_worker_id() -> str:
    """An id for a new worker of this process."""
    pid = os.getpid()
    return str(Owner(pid, _host(), _scope(), _started(pid) or 0, uuid.uuid4().hex[:8]))


def gone(owner_id: str) -> bool:
    """Whether the process that ``owner_id`` names has certainly ended (see the module)."""
    owner = parse(owner_id)
    if owner is None or owner.scope != _scope():
        return False
    if owner.pid == os.getpid():
        return owner.started != _started(owner.pid)
    started = _started(owner.pid)
    return started is None or started not in (owner.started, _HIDDEN)


def _host() -> str:
    name = re.sub(r"[^A-Za-z0-9.-]", "-", socket.gethostname())[:63]
    return name or "host"


@functools.cache
def _boot_and_namespace() -> str:
    """What makes pids comparable: this boot of this machine, this pid namespace."""
    if _LINUX:
        try:
            with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as f:
                boot = f.read().strip()
            namespace = str(os.stat("/proc/self/ns/pid").st_ino)
            return f"{boot}/{namespace}"
        except OSError:
            pass
    return f"boot {int(psutil.boot_time())}"


@functools.cache
def _scope() -> str:
    marker = f"{socket.gethostname()}/{_boot_and_namespace()}"
    return hashlib.sha256(marker.encode()).hexdigest()[:12]


def _started(pid: int) -> int | None:
    """When process ``pid`` started; None if there is none (or only its zombie);
    :data:`_HIDDEN` if it exists but its start cannot be read."""
    if _LINUX:
        try:
            with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
                stat = f.read()
        except OSError:
            return None
        # "pid (name) state ppid ...": the name may hold spaces and parentheses.
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) < 20 or fields[0] in ("Z", "X", "x"):
            return None
        return int(fields[19])  # field 22 of proc_pid_stat(5): start time in clock ticks
    try:
        process = psutil.Process(pid)
        if process.status() == psutil.STATUS_ZOMBIE:
            return None
        return int(process.create_time() * 1000)
    except psutil.NoSuchProcess:
        return None
    except psutil.Error:
        return _HIDDEN


__all__ = ["Owner", "gone", "new_worker_id", "parse"]
