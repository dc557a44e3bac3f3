"""One thread that embeds the short texts of many callers, together.

Each run embeds its query: one short text, a few milliseconds of model time. Run on the
event loop, that time blocks every other conversation of the process; sent through
``asyncio.to_thread``, it waits behind whatever else the default executor holds (the SDK's
``SQLiteSession`` uses it too). A :class:`QueryLane` is a thread of its own: callers put
their texts in its queue and await the result; while the model runs, texts that arrive
wait, and the next inference takes all of them at once (up to ``max_texts``); a long one
(a pasted message) gets an inference of its own, so that the short ones are not padded to
its length. The model releases the GIL while it computes, so the event loop goes on
meanwhile, and under many concurrent runs one batched inference costs less than the same
texts one by one.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import queue
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from ..._forks import ForkSafeLock, renew_in_child

Float32Array = npt.NDArray[np.float32]
Infer = Callable[[list[str]], Float32Array]


@dataclass
class _Request:
    texts: list[str]
    future: concurrent.futures.Future[Float32Array] = field(
        default_factory=concurrent.futures.Future
    )


SHORT_CHARS = 200
"""A request of more characters than this (a pasted text) is embedded in a call of its own:
the short texts beside it would be padded to its length."""


class QueryLane:
    """Embeds texts with ``infer`` (texts -> one row each) on one daemon thread, started on
    first use; requests queued while it is busy are embedded in one call of at most
    ``max_texts`` texts (a request is never split), a long one (:data:`SHORT_CHARS`)
    alone."""

    def __init__(self, infer: Infer, *, max_texts: int, name: str = "mem01-embed") -> None:
        self._infer = infer
        self._max_texts = max_texts
        self._name = name
        self._queue: queue.SimpleQueue[_Request] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = ForkSafeLock()
        renew_in_child(self)

    async def embed(self, texts: Sequence[str]) -> Float32Array:
        """One row per text, in order."""
        return await asyncio.wrap_future(self.submit(texts))

    def submit(self, texts: Sequence[str]) -> concurrent.futures.Future[Float32Array]:
        """Queue ``texts``; the future gets one row per text, in order."""
        request = _Request(list(texts))
        self._start()
        self._queue.put(request)
        return request.future

    def _start(self) -> None:
        if self._thread is not None:
            return
        with self._lock:
            if self._thread is None:
                thread = threading.Thread(target=self._serve, name=self._name, daemon=True)
                thread.start()
                self._thread = thread

    def forked(self) -> None:
        """In a child just forked: the parent's thread is not there, and its requests
        are the parent's."""
        self._queue = queue.SimpleQueue()
        self._thread = None

    def _serve(self) -> None:
        held: _Request | None = None  # taken from the queue, but too many for the last call
        while True:
            taken = [held if held is not None else self._queue.get()]
            held = None
            count = len(taken[0].texts)
            while count < self._max_texts and self._short(taken[0]):
                try:
                    request = self._queue.get_nowait()
                except queue.Empty:
                    break
                if count + len(request.texts) > self._max_texts or not self._short(request):
                    held = request
                    break
                taken.append(request)
                count += len(request.texts)
            self._answer(taken)

    @staticmethod
    def _short(request: _Request) -> bool:
        return sum(map(len, request.texts)) <= SHORT_CHARS

    def _answer(self, taken: list[_Request]) -> None:
        wanted = [r for r in taken if r.future.set_running_or_notify_cancel()]
        if not wanted:
            return
        try:
            texts = [t for r in wanted for t in r.texts]
            rows = self._infer(texts)
            if len(rows) != len(texts):
                raise RuntimeError(f"the model returned {len(rows)} rows for {len(texts)} texts")
        except Exception as exc:  # each caller hears of it; the lane goes on
            for r in wanted:
                r.future.set_exception(exc)
            return
        at = 0
        for r in wanted:
            r.future.set_result(rows[at : at + len(r.texts)])
            at += len(r.texts)


__all__ = ["SHORT_CHARS", "QueryLane"]
