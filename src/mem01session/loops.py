"""Event loops: a loop of the library's own on a thread, and handing work between loops.

The SDK runs agents on whatever loop the caller has: one ``asyncio.run`` per script, a new
one per call, the loop ``Runner.run_sync`` keeps between calls (and does not run between
them), a notebook's loop that never stops. Background work cannot live on such a loop, so
a :class:`~mem01session.memory.Memory` keeps its worker on a :class:`LoopThread`, and
what callers ask of that worker is handed over with :func:`run_on`.

Objects that hold a loop's resources say which loop they belong to; a coroutine for them
started on another loop is handed to theirs (:func:`elsewhere` tells when).
"""

from __future__ import annotations

import asyncio
import concurrent.futures.thread  # before any exit hook is registered: see below
import contextlib
import threading
from collections.abc import Callable, Coroutine
from typing import Any, Generic, TypeVar

from ._forks import ForkSafeLock
from .logs import get_logger

log = get_logger(__name__)
T = TypeVar("T")


def running_loop() -> asyncio.AbstractEventLoop | None:
    """The loop running in this thread, if any."""
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def elsewhere(loop: asyncio.AbstractEventLoop | None) -> asyncio.AbstractEventLoop | None:
    """``loop`` if it is running on another thread than the caller's; else None (the
    caller's own loop, or a loop that no longer runs: nothing can be handed to it)."""
    if loop is None or loop.is_closed() or not loop.is_running():
        return None
    return None if running_loop() is loop else loop


async def run_on(loop: asyncio.AbstractEventLoop, coro: Coroutine[Any, Any, T]) -> T:
    """Await ``coro`` run on ``loop`` (running on another thread). Cancelling the caller
    cancels it there."""
    return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, loop))


class LoopThread:
    """An event loop running on a daemon thread of its own, until :meth:`stop`.

    When it stops, the tasks still on it are cancelled and allowed to finish, async
    generators and the default executor are shut down, and the loop is closed.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def __repr__(self) -> str:
        state = "running" if self._thread.is_alive() else "stopped"
        return f"LoopThread({self.name!r}, {state})"

    @property
    def alive(self) -> bool:
        """Whether the loop still takes work."""
        return self._thread.is_alive() and not self.loop.is_closed()

    @property
    def current(self) -> bool:
        """Whether the caller runs on this loop."""
        return running_loop() is self.loop

    async def call(self, coro: Coroutine[Any, Any, T]) -> T:
        """Await ``coro`` on this loop, from any loop (on this one, directly)."""
        if self.current:
            return await coro
        return await run_on(self.loop, coro)

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Start ``coro`` on this loop from synchronous code; its future."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def stop(self) -> None:
        """Ask the loop to stop (it finishes its current step first); see :meth:`join`."""
        with contextlib.suppress(RuntimeError):  # closed already
            self.loop.call_soon_threadsafe(self.loop.stop)

    def join(self, timeout: float | None = None) -> bool:
        """Wait for the thread to end (not from the loop itself); True when it has."""
        if self._thread is not threading.current_thread():
            self._thread.join(timeout)
        return not self._thread.is_alive()

    def _run(self) -> None:
        loop = self.loop
        asyncio.set_event_loop(loop)
        try:
            loop.run_forever()
            tasks = asyncio.all_tasks(loop)
            for task in tasks:
                task.cancel()
            if tasks:
                loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.run_until_complete(loop.shutdown_default_executor())
        finally:
            asyncio.set_event_loop(None)
            loop.close()


class PerLoop(Generic[T]):
    """One ``T`` per event loop, made on first use there: for HTTP clients, whose pooled
    connections belong to the loop that opened them.

    :meth:`forget_loop` closes the running loop's (that loop is about to end); the one of
    a loop that was closed without it is dropped (its connections went with the loop).
    """

    def __init__(
        self, make: Callable[[], T], close: Callable[[T], Coroutine[Any, Any, object]]
    ) -> None:
        self._make = make
        self._close = close
        self._items: dict[asyncio.AbstractEventLoop, T] = {}
        self._lock = threading.Lock()

    def get(self) -> T:
        """The running loop's (made now if it has none)."""
        loop = asyncio.get_running_loop()
        item = self._items.get(loop)
        if item is None:
            with self._lock:
                for gone in [other for other in self._items if other.is_closed()]:
                    del self._items[gone]
                item = self._items.get(loop)
                if item is None:
                    item = self._items[loop] = self._make()
        return item

    async def forget_loop(self) -> None:
        """Close the running loop's, if it has one."""
        with self._lock:
            item = self._items.pop(asyncio.get_running_loop(), None)
        if item is not None:
            await self._close(item)

    async def aclose(self) -> None:
        """Close every loop's: this loop's here, another running loop's there; one whose
        loop no longer runs is closed here if it can be."""
        with self._lock:
            items, self._items = self._items, {}
        for loop, item in items.items():
            other = elsewhere(loop)
            with contextlib.suppress(Exception):  # e.g. its loop closed meanwhile
                if other is None:
                    await self._close(item)
                else:
                    async with asyncio.timeout(CLOSE_ELSEWHERE_SECONDS):
                        await run_on(other, self._close(item))


# Closing waits at most this long for another thread's loop to close what it holds.
CLOSE_ELSEWHERE_SECONDS = 5.0

_exit_hooks: list[Callable[[], None]] = []
_exit_lock = ForkSafeLock()
_exit_registered = False


def register_exit_hook(hook: Callable[[], None]) -> None:
    """Call ``hook`` when the interpreter exits normally, while every thread (and the
    thread pools ``asyncio.to_thread`` uses) still works.

    Hooks run in the interpreter's thread shutdown, before it waits for non-daemon threads
    and before ``atexit`` handlers (the embedded PostgreSQL is stopped by one of those).
    Python runs these hooks newest first; ``concurrent.futures``' own hook, which refuses
    new work to every thread pool, was registered when this module imported it, so it
    runs after ours. Without that facility (not part of Python's public API), ``atexit``.
    """
    global _exit_registered
    with _exit_lock:
        if hook not in _exit_hooks:
            _exit_hooks.append(hook)
        if _exit_registered:
            return
        _exit_registered = True
    register = getattr(threading, "_register_atexit", None)
    if register is not None:
        register(_run_exit_hooks)
    else:  # pragma: no cover - every CPython since 3.9 has it
        import atexit

        atexit.register(_run_exit_hooks)


def unregister_exit_hook(hook: Callable[[], None]) -> None:
    with _exit_lock, contextlib.suppress(ValueError):
        _exit_hooks.remove(hook)


def _run_exit_hooks() -> None:
    with _exit_lock:
        hooks = list(reversed(_exit_hooks))
        _exit_hooks.clear()
    for hook in hooks:
        try:
            hook()
        except Exception as exc:  # one failing hook never keeps the others from running
            log.warning("exit hook %r failed: %s", hook, exc)


__all__ = [
    "CLOSE_ELSEWHERE_SECONDS",
    "LoopThread",
    "PerLoop",
    "elsewhere",
    "register_exit_hook",
    "run_on",
    "running_loop",
    "unregister_exit_hook",
]
