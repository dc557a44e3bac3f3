"""Vector parameters in pgvector's binary form: no text to format in Python or to parse
in the server (formatting one 384-dimension vector as text costs about 0.1 ms).

The direct pool's connections know pgvector's types (:func:`binary_dumpers`) and send
these in binary; any other psycopg connection (a SQLAlchemy one) sends them as text, so
the SQL casts them either way: ``CAST(:v AS vector)``, ``CAST(:vs AS vector[])``.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence

import psycopg
from psycopg.adapt import Dumper
from psycopg.pq import Format


class BinaryVector:
    """One ``vector`` parameter."""

    __slots__ = ("data",)

    def __init__(self, values: Sequence[float]) -> None:
        # Imported by the first vector made: a process that makes none (an inspector
        # command) does not load NumPy, a tenth of a second.
        import numpy as np

        floats = np.asarray(values, dtype=">f4")
        if floats.ndim != 1 or not 0 < floats.shape[0] < 1 << 16:
            raise ValueError(f"a vector has 1 to 65535 dimensions, got shape {floats.shape}")
        # pgvector's wire format: dimensions (int16), an unused int16, big-endian float32s.
        self.data: bytes = floats.shape[0].to_bytes(2, "big") + b"\0\0" + floats.tobytes()


class BinaryVectors:
    """A ``vector[]`` parameter (psycopg would send a list of vectors as text)."""

    __slots__ = ("items",)

    def __init__(self, items: Iterable[BinaryVector]) -> None:
        self.items = tuple(items)


def _text(vector: BinaryVector) -> str:
    import numpy as np

    floats = np.frombuffer(vector.data, dtype=">f4", offset=4)
    return "[" + ",".join(map(repr, floats.tolist())) + "]"


class _TextVectorDumper(Dumper):
    format = Format.TEXT

    def dump(self, obj: BinaryVector) -> bytes:
        return _text(obj).encode()


class _TextVectorsDumper(Dumper):
    format = Format.TEXT

    def dump(self, obj: BinaryVectors) -> bytes:
        return ("{" + ",".join(f'"{_text(v)}"' for v in obj.items) + "}").encode()


class _BinaryVectorDumper(Dumper):
    format = Format.BINARY

    def dump(self, obj: BinaryVector) -> bytes:
        return obj.data


class _BinaryVectorsDumper(Dumper):
    format = Format.BINARY
    element = 0  # the vector type's oid, set by binary_dumpers()

    def dump(self, obj: BinaryVectors) -> bytes:
        # PostgreSQL's binary array: dimensions, a has-nulls flag, the element type, then
        # (length, lower bound) per dimension and each element after its length.
        items = obj.items
        if not items:
            return struct.pack("!iiI", 0, 0, self.element)
        head = struct.pack("!iiIii", 1, 0, self.element, len(items), 1)
        return head + b"".join(struct.pack("!i", len(v.data)) + v.data for v in items)


psycopg.adapters.register_dumper(BinaryVector, _TextVectorDumper)
psycopg.adapters.register_dumper(BinaryVectors, _TextVectorsDumper)


def binary_dumpers(oid: int, array_oid: int) -> list[tuple[type, type[Dumper]]]:
    """The binary dumpers for a connection whose server's ``vector`` type has ``oid``
    (and its array type ``array_oid``), to register on it."""
    one = type("VectorDumper", (_BinaryVectorDumper,), {"oid": oid})
    many = type("VectorsDumper", (_BinaryVectorsDumper,), {"oid": array_oid, "element": oid})
    return [(BinaryVector, one), (BinaryVectors, many)]


__all__ = ["BinaryVector", "BinaryVectors", "binary_dumpers"]
