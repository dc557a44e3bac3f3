"""Vectors a turn carries to a worker of another process.

A run embeds its user's words to recall; the worker embeds the same words again, for the
candidates it shows the extractor and for the episode it stores. In one process the
embedder's recent texts make the second time free; a worker elsewhere
(``Memory(run_worker=False)``) would pay the model again. So such a turn's job carries
the run's vector of each of its texts the embedder still has, under the model's name; the
worker uses one only for the same text, the same model and the right dimension (anything
else is embedded as usual), and the job's completion drops them from the row.
"""

from __future__ import annotations

import base64
import binascii
import struct
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

KEY = "vectors"
"""Payload key of the carried vectors: ``{"model": name, "of": {text: base64}}``."""

Known = Callable[[str], Sequence[float] | None]


def carry(texts: Iterable[str], known: Known, model: str) -> dict[str, Any] | None:
    """The payload entry for ``texts`` whose vectors ``known`` has (None: none has)."""
    found = {t: _pack(v) for t in dict.fromkeys(texts) if t and (v := known(t)) is not None}
    return {"model": model, "of": found} if found else None


def carried(payload: Mapping[str, Any], model: str, dim: int) -> dict[str, list[float]]:
    """The vectors ``payload`` carries that ``model`` made, ``dim`` floats each."""
    entry = payload.get(KEY)
    if not isinstance(entry, dict) or entry.get("model") != model:
        return {}
    of = entry.get("of")
    out: dict[str, list[float]] = {}
    for text, packed in of.items() if isinstance(of, dict) else ():
        vector = _unpack(packed, dim) if isinstance(text, str) else None
        if vector is not None:
            out[text] = vector
    return out


def _pack(vector: Sequence[float]) -> str:
    return base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode("ascii")


def _unpack(packed: object, dim: int) -> list[float] | None:
    if not isinstance(packed, str):
        return None
    try:
        raw = base64.b64decode(packed, validate=True)
    except (binascii.Error, ValueError):
        return None
    if len(raw) != 4 * dim:
        return None
    return list(struct.unpack(f"<{dim}f", raw))


__all__ = ["KEY", "Known", "carried", "carry"]
