"""The embedding process's side of :mod:`.process`: ``python -m`` this module.

It reads request frames (:mod:`.wire`) on stdin and answers on what was stdout (fd 1
is pointed at stderr, so that nothing a library prints can break a frame). Queries go to a
:class:`~.query_lane.QueryLane` (those that wait are embedded together); bulk requests to
one thread of their own, so that a batch never holds a query up. It exits when stdin ends:
when the parent process closes it or is gone, however it ended. It ignores SIGINT: Ctrl-C
in a terminal reaches the whole process group, and the parent decides when it stops.
"""

from __future__ import annotations

import concurrent.futures
import functools
import json
import os
import signal
import sys
import threading
from collections.abc import Callable
from typing import IO, TypeVar

from ...errors import EmbeddingError
from .embedder import Float32Array, embed_texts
from .model import ModelKey, runtime
from .query_lane import QueryLane
from .wire import (
    EMBED_QUERY,
    ERROR,
    LOAD,
    LOADED,
    VECTORS,
    frame,
    pack_seconds,
    read_frame,
    unpack_texts,
)

T = TypeVar("T")


class _Answers:
    """Writes answer frames, one at a time (the lane and the bulk thread both answer)."""

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

    def answer(
        self,
        request_id: int,
        status: int,
        encode: Callable[[T], bytes],
        done: concurrent.futures.Future[T],
    ) -> None:
        """``done``'s result as a ``status`` frame, or its error as an ERROR frame (the
        caller hears of it as an EmbeddingError)."""
        try:
            payload = encode(done.result())
        except Exception as exc:
            message = str(exc)
            if not isinstance(exc, EmbeddingError):
                message = f"{type(exc).__name__}: {message}"
            self.send(request_id, ERROR, message.encode("utf-8", "replace"))
        else:
            self.send(request_id, status, payload)


def _vector_bytes(vectors: Float32Array) -> bytes:
    return vectors.astype("<f4", copy=False).tobytes()


def serve(options: dict[str, object], requests: IO[bytes], out: IO[bytes]) -> None:
    """Answer ``requests`` until they end."""
    key = ModelKey(
        model_path=_str_or_none(options["model_path"]),
        verify=bool(options["verify"]),
        intra_op_threads=_int(options["intra_op_threads"]),
    )
    batching = (_int(options["batch_size"]), _int(options["max_batch_tokens"]))
    infer = functools.partial(embed_texts, key, batching)
    lane = QueryLane(infer, max_texts=batching[0], name="mem01-embed-queries")
    bulk = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="mem01-embed-bulk")
    answers = _Answers(out)
    while (request := read_frame(requests)) is not None:
        request_id, kind, payload = request
        if kind == LOAD:
            loading = bulk.submit(lambda: runtime(key).load_seconds)
            loading.add_done_callback(
                functools.partial(answers.answer, request_id, LOADED, pack_seconds)
            )
            continue
        try:
            texts = unpack_texts(payload)
        except (ValueError, UnicodeDecodeError) as exc:  # struct.error is a ValueError
            answers.send(request_id, ERROR, f"a malformed request: {exc}".encode())
            continue
        done = lane.submit(texts) if kind == EMBED_QUERY else bulk.submit(infer, texts)
        done.add_done_callback(
            functools.partial(answers.answer, request_id, VECTORS, _vector_bytes)
        )


def _str_or_none(value: object) -> str | None:
    return None if value is None else str(value)


def _int(value: object) -> int:
    if not isinstance(value, int):
        raise TypeError(f"expected an int, got {value!r}")
    return value


def main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    answers_fd = os.dup(1)
    os.dup2(2, 1)  # a stray print goes to stderr, not into a frame
    sys.stdout = sys.stderr
    options = json.loads(sys.argv[1])
    with os.fdopen(answers_fd, "wb") as out:
        serve(options, sys.stdin.buffer, out)
    # stdin ended: the parent is gone or closed us. Work still running is for nobody.
    os._exit(0)


if __name__ == "__main__":
    main()
