"""The frames between a process and its embedding process (:mod:`.process`).

A frame is a header (request id, kind or status, payload length; little-endian) and its
payload. Requests carry texts (their UTF-8 lengths, then the bytes) or nothing (load);
answers carry float32 rows, an error message, or the model's load time.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import IO, Final

import numpy as np
import numpy.typing as npt

Float32Array = npt.NDArray[np.float32]

HEADER: Final = struct.Struct("<QBI")  # request id, kind or status, payload length
_COUNT: Final = struct.Struct("<I")
_SECONDS: Final = struct.Struct("<d")

# Requests.
EMBED_QUERY: Final = 0  # short texts, answered before any bulk work waiting
EMBED_BULK: Final = 1
LOAD: Final = 2
# Answers.
VECTORS: Final = 0
ERROR: Final = 1
LOADED: Final = 2


def pack_texts(texts: Sequence[str]) -> bytes:
    encoded = [t.encode("utf-8") for t in texts]
    lengths = struct.pack(f"<{len(encoded)}I", *map(len, encoded))
    return _COUNT.pack(len(encoded)) + lengths + b"".join(encoded)


def unpack_texts(payload: bytes) -> list[str]:
    (count,) = _COUNT.unpack_from(payload)
    lengths = struct.unpack_from(f"<{count}I", payload, _COUNT.size)
    at = _COUNT.size + 4 * count
    texts = []
    for n in lengths:
        texts.append(payload[at : at + n].decode("utf-8"))
        at += n
    return texts


def pack_seconds(seconds: float) -> bytes:
    return _SECONDS.pack(seconds)


def unpack_seconds(payload: bytes) -> float:
    value: float = _SECONDS.unpack(payload)[0]
    return value


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


def rows(payload: bytes, dim: int) -> Float32Array:
    return np.frombuffer(payload, dtype="<f4").reshape(-1, dim).astype(np.float32, copy=False)


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
