"""Helper processes of this one, spoken to in frames over their stdin and stdout.

The embedding process (:mod:`.embeddings.model_process`) and the recall process
(:mod:`.recall_process`) are both one :class:`ChildProcess`: started on first use, started
again on the next request after it died (its requests in flight fail), and ended when this
process closes its stdin (at exit, or however this process ends: the child sees its stdin
end). After a fork the child belongs to the parent: the forked process closes its copy of
the pipes (the child must still see its stdin end when the parent goes) and starts its own.

A frame is a header (request id, kind or status, payload length; little-endian) and its
payload; what a payload holds is each child's business.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import itertools
import os
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Final

from ._forks import ForkSafeLock, renew_in_child
from .logs import get_logger

log = get_logger(__name__)

HEADER: Final = struct.Struct("<QBI")  # request id, kind or status, payload length

# A child that died before answering anything (it could not start: a broken environment,
# or ``sys.executable`` is not Python, as under some application servers) is not started
# again for this long: each request would pay a process start for nothing.
RESTART_PAUSE: Final = 5.0
_STOP_WAIT: Final = 5.0


def frame(request_id: int, kind: int, payload: bytes = b"") -> bytes:
    return HEADER.pack(request_id, kind, len(payload)) + payload


def read_frame(stream: IO[bytes]) -> tuple[int, int, bytes] | None:
    """The next frame, or None at the end of the stream (the other side is gone)."""
    header = _read_exactly(stream, HEADER.size)
    if header is None:
        return None
    request_id, kind, length = HEADER.unpack(header)
    payload = _read_exactly(stream, length) if length else b""
    if payload is None:
        return None
    return request_id, kind, payload


def _read_exactly(stream: IO[bytes], size: int) -> bytes | None:
    chunks = []
    left = size
    while left:
        chunk = stream.read(left)
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


class _Child:
    """One running child and the requests it owes an answer."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc
        self.pid = proc.pid
        self.owner = os.getpid()
        self.pending: dict[int, concurrent.futures.Future[object]] = {}
        self.answered = False
        self.gone = False


class ChildProcess:
    """``python -m <module> <args>``, sent request frames; thread-safe.

    Subclasses say what the child is (``what``, for messages: "the embedding process"),
    what to do when it cannot run (``instead``), and how an answer frame becomes a result
    (:meth:`decode`) or a failure (:meth:`failure`)."""

    what = "the helper process"
    instead = ""
    thread_name = "mem01-child"  # its reader thread's, before the child's pid

    def __init__(self, module: str, args: Sequence[str] = (), greeting: bytes = b"") -> None:
        self._args = [module, *args]
        self._greeting = greeting  # written first to every child started
        self._lock = ForkSafeLock()  # the child's lifecycle, its pending map, its stdin
        renew_in_child(self)  # a forked process closes its copy of the child's pipes
        self._child: _Child | None = None
        self._ids = itertools.count(1)
        self._failed_start: tuple[float, str] | None = None

    # -- what a subclass says ------------------------------------------------------------

    def decode(self, status: int, payload: bytes) -> object:
        """An answer frame's result; raises the failure it reports."""
        raise NotImplementedError

    def failure(self, why: str) -> Exception:
        """The exception requests fail with when the child cannot answer them."""
        return RuntimeError(why)

    def environment(self, env: dict[str, str]) -> None:
        """Adjust the child's environment (a copy of this process's) before it starts."""

    # -- requests ------------------------------------------------------------------------

    @property
    def pid(self) -> int | None:
        """The running child's pid (None before the first request, or once it is gone)."""
        child = self._child
        return None if child is None or child.gone else child.pid

    def request(self, kind: int, payload: bytes) -> concurrent.futures.Future[object]:
        """Send one request; the future gets :meth:`decode`'s result. Writes to the
        child's stdin: call it from a thread when ``payload`` is large."""
        future: concurrent.futures.Future[object] = concurrent.futures.Future()
        with self._lock:
            for attempt in (1, 2):
                child = self._running()
                request_id = next(self._ids)
                child.pending[request_id] = future
                stdin = child.proc.stdin
                assert stdin is not None
                try:
                    _write_all(stdin, frame(request_id, kind, payload))
                    break
                except OSError:  # it died since: once more with a new one, if it had run
                    del child.pending[request_id]
                    why = self._ended(child, _exit_code(child.proc))
                    if child.answered and attempt == 1:
                        continue
                    raise self.failure(why) from None
        return future

    def unanswered(self) -> int:
        """How many requests the running child owes an answer."""
        child = self._child
        return 0 if child is None or child.gone else len(child.pending)

    def close(self) -> None:
        """Stop the child (if any): its stdin closes, it exits; killed if it does not."""
        with self._lock:
            child, self._child = self._child, None
        if child is not None and child.owner == os.getpid():
            _stop(child)

    def forked(self) -> None:
        """In a forked process: the child is the parent's. Close this copy of its pipes
        (so that it still sees its stdin end when the parent exits) and start afresh."""
        child, self._child = self._child, None
        if child is not None:
            for stream in (child.proc.stdin, child.proc.stdout):
                if stream is not None:
                    with contextlib.suppress(OSError):
                        stream.close()

    # -- the child's lifecycle -------------------------------------------------------------

    def _running(self) -> _Child:
        child = self._child
        if (
            child is not None
            and not child.gone
            and child.owner == os.getpid()
            and child.proc.poll() is None  # it died and its reader has not seen it yet
        ):
            return child
        if child is not None and not child.gone and child.owner == os.getpid():
            code = child.proc.poll()
            if code is not None:  # it died, and its reader has not said so yet
                self._ended(child, code)
        if self._failed_start is not None:
            when, why = self._failed_start
            if time.monotonic() - when < RESTART_PAUSE:
                raise self.failure(why)
        child = self._child = _Child(self._spawn())
        threading.Thread(
            target=self._read, args=(child,), name=f"{self.thread_name}-{child.pid}", daemon=True
        ).start()
        if self._greeting:
            stdin = child.proc.stdin
            assert stdin is not None
            with contextlib.suppress(OSError):  # it died at once: the request says so
                _write_all(stdin, self._greeting)
        return child

    def _spawn(self) -> subprocess.Popen[bytes]:
        env = dict(os.environ)
        # This package, wherever it was imported from (an install, a checkout on sys.path).
        root = str(Path(__file__).resolve().parents[1])
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
        self.environment(env)
        try:
            return subprocess.Popen(
                [sys.executable, "-m", *self._args],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                # Unbuffered: a buffered stream's lock, held by the reader thread at a fork,
                # would never be released in the forked process.
                bufsize=0,
                env=env,
                close_fds=True,
            )
        except OSError as exc:
            why = f"could not start {self.what} ({sys.executable}: {exc.strerror or exc})"
            why += f"; {self.instead}" if self.instead else ""
            self._failed_start = (time.monotonic(), why)
            raise self.failure(why) from exc

    def _read(self, child: _Child) -> None:
        stdout = child.proc.stdout
        assert stdout is not None
        try:
            while (answer := read_frame(stdout)) is not None:
                request_id, status, payload = answer
                child.answered = True
                with self._lock:
                    future = child.pending.pop(request_id, None)
                if future is None or not future.set_running_or_notify_cancel():
                    continue
                try:
                    future.set_result(self.decode(status, payload))
                except Exception as exc:
                    future.set_exception(exc)
        except (OSError, ValueError):
            pass
        self._gone(child, _exit_code(child.proc))

    def _ended(self, child: _Child, code: int | None) -> str:
        """Mark ``child`` gone (the lock held); why it went. The current child gone before
        answering anything could not start: the next start waits :data:`RESTART_PAUSE`
        (one :meth:`close` stopped is not counted)."""
        why = (
            f"{self.what} (pid {child.pid}) exited with code {code}"
            if code is not None
            else f"{self.what} (pid {child.pid}) stopped answering"
        )
        if not child.answered:
            why += " before answering anything (its stderr says why)"
            why += f"; {self.instead}" if self.instead else ""
        child.gone = True
        if self._child is child:
            self._failed_start = None if child.answered else (time.monotonic(), why)
        return why

    def _gone(self, child: _Child, code: int | None) -> None:
        with self._lock:
            why = self._ended(child, code)
            owed, child.pending = child.pending, {}
        if owed:
            log.warning("%s; %d request(s) failed", why, len(owed))
        for future in owed.values():
            if future.set_running_or_notify_cancel():
                future.set_exception(self.failure(why))


def _write_all(stream: IO[bytes], data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[stream.write(view) or 0 :]  # a pipe may take part of it


def _exit_code(proc: subprocess.Popen[bytes]) -> int | None:
    """Its exit code; None when it had to be killed (its stdout ended, it did not exit)."""
    try:
        return proc.wait(timeout=_STOP_WAIT)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        return None


def _stop(child: _Child) -> None:
    stdin: IO[bytes] | None = child.proc.stdin
    if stdin is not None:
        with contextlib.suppress(OSError):
            stdin.close()
    _exit_code(child.proc)


class Answers:
    """A child's side: writes answer frames, one at a time (from any thread), to what was
    its stdout; see :func:`answers_out`."""

    def __init__(self, out: IO[bytes]) -> None:
        self._out = out
        self._lock = threading.Lock()

    def send(self, request_id: int, status: int, payload: bytes) -> None:
        with self._lock:
            try:
                self._out.write(frame(request_id, status, payload))
                self._out.flush()
            except OSError:  # the parent is gone: stdin's end stops the process
                pass


def answers_out() -> IO[bytes]:
    """A child's start: the stream its answers go to (what was fd 1), with fd 1 pointed at
    stderr, so that nothing a library prints can break a frame."""
    answers_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return os.fdopen(answers_fd, "wb")


__all__ = ["HEADER", "Answers", "ChildProcess", "answers_out", "frame", "read_frame"]
