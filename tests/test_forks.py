"""A process-wide lock is free in a forked child, whoever held it in the parent."""

from __future__ import annotations

import os
import threading

import pytest

from mem01session._forks import ForkSafeLock
from tests.child_env import fork_exit_code

pytestmark = [
    pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform"),
    pytest.mark.slow,  # forks (see tests/spawns.py)
]


def test_it_locks_like_a_lock() -> None:
    lock = ForkSafeLock()
    with lock:
        assert lock.locked()
        assert not lock.acquire(blocking=False)
    assert lock.acquire(timeout=1)
    lock.release()
    assert not lock.locked()


def test_a_lock_another_thread_holds_at_the_fork_is_free_in_the_child() -> None:
    lock = ForkSafeLock()
    taken, fork_done = threading.Event(), threading.Event()

    def hold() -> None:
        with lock:
            taken.set()
            fork_done.wait(30)

    holder = threading.Thread(target=hold)
    holder.start()
    assert taken.wait(30)
    pid = os.fork()
    if pid == 0:  # the child: the holding thread does not run here
        os._exit(0 if lock.acquire(timeout=10) else 1)
    fork_done.set()
    holder.join(30)
    assert fork_exit_code(pid) == 0
    assert not lock.locked()  # the parent's own is released by its holder
