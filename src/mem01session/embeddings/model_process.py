"""The local embedding model in a process of its own (the default for :class:`MiniLMEmbedder`).

Why: a run's query embedding is the largest piece of CPU memory adds to a run (7 ms of a
14-token query here, more under load), and in the runs' process it competes with every
conversation for the GIL and for the process's share of the CPU: with many concurrent
conversations on a busy machine the runs queue behind it (``python -m bench load``). In a
process of its own the model's time is not the runs' process's, and the operating system
schedules it beside them. A process holds one copy of the model either way: in this mode
the parent never loads it.

One embedding process per model and batching, shared by the embedders that use them; its
lifecycle is a :class:`~mem01session.children.ChildProcess`'s (started on first use,
again after it died, its requests in flight failing with :class:`EmbeddingError`).
"""

from __future__ import annotations

import atexit
import concurrent.futures
import json
from collections.abc import Sequence
from typing import Final, cast

from .._forks import ForkSafeLock
from ..children import ChildProcess
from ..errors import EmbeddingError
from .minilm_model import DIM, ModelKey
from .model_wire import (
    EMBED_BULK,
    EMBED_QUERY,
    ERROR,
    LOAD,
    LOADED,
    VECTORS,
    Float32Array,
    pack_texts,
    rows,
    unpack_seconds,
)

# Loading takes about a second here (bench/embedder_bench.py); a child that has not loaded
# the model after this long is stuck (a hung file system, say), not slow.
LOAD_TIMEOUT: Final = 120.0


class ModelProcess(ChildProcess):
    """Sends texts to the embedding process for ``key`` and ``batching``; thread-safe."""

    what = "the embedding process"
    instead = "MEM01_EMBEDDING_PROCESS=0 runs the model in this process instead"
    thread_name = "mem01-embed"

    def __init__(self, key: ModelKey, batching: tuple[int, int]) -> None:
        options = json.dumps(
            {
                "model_path": key.model_path,
                "verify": key.verify,
                "intra_op_threads": key.intra_op_threads,
                "batch_size": batching[0],
                "max_batch_tokens": batching[1],
            }
        )
        super().__init__("mem01session.embeddings.model_child", [options])

    def environment(self, env: dict[str, str]) -> None:
        env.setdefault("OPENBLAS_NUM_THREADS", "1")  # numpy's pooling needs no thread pool
        env.setdefault("OMP_NUM_THREADS", "1")

    def failure(self, why: str) -> Exception:
        return EmbeddingError(why, retryable=True)

    def decode(self, status: int, payload: bytes) -> object:
        if status == VECTORS:
            return rows(payload, DIM)
        if status == LOADED:
            return unpack_seconds(payload)
        if status == ERROR:
            raise EmbeddingError(payload.decode("utf-8", "replace"))
        raise EmbeddingError(f"an unknown answer (status {status})")

    def submit(
        self, texts: Sequence[str], *, query: bool
    ) -> concurrent.futures.Future[Float32Array]:
        """Queue ``texts`` (a query: answered before bulk work); the future gets their
        float32 rows, in order. Writes to the child's stdin: call it from a thread when
        ``texts`` is large."""
        kind = EMBED_QUERY if query else EMBED_BULK
        future = self.request(kind, pack_texts(texts))
        return cast("concurrent.futures.Future[Float32Array]", future)

    def embed(self, texts: Sequence[str]) -> Float32Array:
        """:meth:`submit` as bulk work, waited for (blocks)."""
        return self.submit(texts, query=False).result()

    def load(self) -> float:
        """Have the child load the model now; the seconds its first load took. Blocks, at
        most :data:`LOAD_TIMEOUT` seconds."""
        try:
            seconds = self.request(LOAD, b"").result(timeout=LOAD_TIMEOUT)
        except concurrent.futures.TimeoutError:
            raise EmbeddingError(
                f"the embedding process (pid {self.pid}) did not load the model within "
                f"{LOAD_TIMEOUT:g} s",
                retryable=True,
            ) from None
        assert isinstance(seconds, float)
        return seconds


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
