"""The local embedding model in a process of its own (the default for :class:`MiniLMEmbedder`).

Why: a run's query embedding is the largest piece of CPU memory adds to a run (7 ms of a
14-token query here, more under load), and in the runs' process it competes with every
conversation for the GIL and for the process's share of the CPU: with many concurrent
conversations on a busy machine the runs queue behind it (``python -m bench load``). In a
process of its own the model's time is not the runs' process's, and the operating system
schedules it beside them. A process holds one copy of the model either way: in this mode
the parent never loads it.

One embedding process per model and batching, shared by the embedders that use them; it
starts on first use, is started again on the next request after it died (its requests in
flight fail with :class:`EmbeddingError`), and ends when this process closes its stdin (at
exit, or however this process ends: the child sees its stdin end). After a fork the child
belongs to the parent: the forked process closes its copy of the pipes (the child must
still see its stdin end when the parent goes) and starts its own.
"""

from __future__ import annotations

import atexit
import concurrent.futures
import contextlib
import itertools
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Final, cast

from ..._forks import ForkSafeLock, renew_in_child
from ...errors import EmbeddingError
from ...logs import get_logger
from .model import DIM, ModelKey
from .wire import (
    EMBED_BULK,
    EMBED_QUERY,
    ERROR,
    LOAD,
    LOADED,
    VECTORS,
    Float32Array,
    frame,
    pack_texts,
    read_frame,
    rows,
    unpack_seconds,
)

log = get_logger(__name__)

# A child that died before answering anything (it could not start: a broken environment,
# or ``sys.executable`` is not Python, as under some application servers) is not started
# again for this long: each run would pay a process start for nothing.
RESTART_PAUSE: Final = 5.0
_STOP_WAIT: Final = 5.0
# Loading takes about a second here (bench/embedder_bench.py); a child that has not loaded
# the model after this long is stuck (a hung file system, say), not slow.
LOAD_TIMEOUT: Final = 120.0


class _Child:
    """One running embedding process and the requests it owes an answer."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc
        self.pid = proc.pid
        self.owner = os.getpid()
        self.pending: dict[int, concurrent.futures.Future[object]] = {}
        self.answered = False
        self.gone = False


class ModelProcess:
    """Sends texts to the embedding process for ``key`` and ``batching``; thread-safe."""

    def __init__(self, key: ModelKey, batching: tuple[int, int]) -> None:
        self._options = json.dumps(
            {
                "model_path": key.model_path,
                "verify": key.verify,
                "intra_op_threads": key.intra_op_threads,
                "batch_size": batching[0],
                "max_batch_tokens": batching[1],
            }
        )
        self._lock = ForkSafeLock()  # the child's lifecycle, its pending map, its stdin
        renew_in_child(self)  # a forked process closes its copy of the child's pipes
        self._child: _Child | None = None
        self._ids = itertools.count(1)
        self._failed_start: tuple[float, str] | None = None

    @property
    def pid(self) -> int | None:
        """The running embedding process's pid (None before the first request)."""
        child = self._child
        return None if child is None or child.gone else child.pid

    def submit(
        self, texts: Sequence[str], *, query: bool
    ) -> concurrent.futures.Future[Float32Array]:
        """Queue ``texts`` (a query: answered before bulk work); the future gets their
        float32 rows, in order. Writes to the child's stdin: call it from a thread when
        ``texts`` is large."""
        kind = EMBED_QUERY if query else EMBED_BULK
        return cast("concurrent.futures.Future[Float32Array]", self._request(kind, texts))

    def embed(self, texts: Sequence[str]) -> Float32Array:
        """:meth:`submit` as bulk work, waited for (blocks)."""
        return self.submit(texts, query=False).result()

    def load(self) -> float:
        """Have the child load the model now; the seconds its first load took. Blocks, at
        most :data:`LOAD_TIMEOUT` seconds."""
        try:
            seconds = self._request(LOAD, ()).result(timeout=LOAD_TIMEOUT)
        except concurrent.futures.TimeoutError:
            raise EmbeddingError(
                f"the embedding process (pid {self.pid}) did not load the model within "
                f"{LOAD_TIMEOUT:g} s",
                retryable=True,
            ) from None
        assert isinstance(seconds, float)
        return seconds

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

    def _request(self, kind: int, texts: Sequence[str]) -> concurrent.futures.Future[object]:
        future: concurrent.futures.Future[object] = concurrent.futures.Future()
        payload = pack_texts(texts) if kind != LOAD else b""
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
                    raise EmbeddingError(why, retryable=True) from None
        return future

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
                raise EmbeddingError(why, retryable=True)
        child = self._child = _Child(self._spawn())
        threading.Thread(
            target=self._read, args=(child,), name=f"mem01-embed-{child.pid}", daemon=True
        ).start()
        return child

    def _spawn(self) -> subprocess.Popen[bytes]:
        env = dict(os.environ)
        # This package, wherever it was imported from (an install, a checkout on sys.path).
        root = str(Path(__file__).resolve().parents[3])
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
        env.setdefault("OPENBLAS_NUM_THREADS", "1")  # numpy's pooling needs no thread pool
        env.setdefault("OMP_NUM_THREADS", "1")
        try:
            return subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "mem01session.embeddings.minilm.child",
                    self._options,
                ],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                # Unbuffered: a buffered stream's lock, held by the reader thread at a fork,
                # would never be released in the forked process.
                bufsize=0,
                env=env,
                close_fds=True,
            )
        except OSError as exc:
            why = (
                f"could not start the embedding process ({sys.executable}: "
                f"{exc.strerror or exc}); MEM01_EMBEDDING_PROCESS=0 runs the model in this "
                "process instead"
            )
            self._failed_start = (time.monotonic(), why)
            raise EmbeddingError(why, retryable=True) from exc

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
                if status == VECTORS:
                    future.set_result(rows(payload, DIM))
                elif status == LOADED:
                    future.set_result(unpack_seconds(payload))
                elif status == ERROR:
                    future.set_exception(EmbeddingError(payload.decode("utf-8", "replace")))
                else:
                    future.set_exception(EmbeddingError(f"an unknown answer (status {status})"))
        except (OSError, ValueError):
            pass
        self._gone(child, _exit_code(child.proc))

    def _ended(self, child: _Child, code: int | None) -> str:
        """Mark ``child`` gone (the lock held); why it went. The current child gone before
        answering anything could not start: the next start waits :data:`RESTART_PAUSE`
        (one :meth:`close` stopped is not counted)."""
        why = _why(child, code)
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
                future.set_exception(EmbeddingError(why, retryable=True))


def _write_all(stream: IO[bytes], data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[stream.write(view) or 0 :]  # a pipe may take part of it


def _why(child: _Child, code: int | None) -> str:
    why = (
        f"the embedding process (pid {child.pid}) exited with code {code}"
        if code is not None
        else f"the embedding process (pid {child.pid}) stopped answering"
    )
    if not child.answered:
        why += (
            " before answering anything (its stderr says why); MEM01_EMBEDDING_PROCESS=0 "
            "runs the model in this process instead"
        )
    return why


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


# One embedding process per model and batching, shared by the embedders that use them.
_processes: dict[tuple[ModelKey, tuple[int, int]], ModelProcess] = {}
_processes_lock = ForkSafeLock()


def model_process(key: ModelKey, batching: tuple[int, int]) -> ModelProcess:
    with _processes_lock:
        found = _processes.get((key, batching))
        if found is None:
            found = _processes[(key, batching)] = ModelProcess(key, batching)
        return found


@atexit.register
def close_all() -> None:
    """Stop every embedding process this process started."""
    with _processes_lock:
        running = list(_processes.values())
    for process in running:
        process.close()


__all__ = ["ModelProcess", "close_all", "model_process"]
