from __future__ import annotations

import asyncio
import contextlib
import re
import threading
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from agents.memory import SQLiteSession

from mem01session import Mem01Session, Memory
from mem01session.db import Database
from mem01session.embeddings import HashingEmbedder
from mem01session.engine import BeliefEngine
from mem01session.engine.ops import Op
from mem01session.extraction import Candidate, Extraction, Turn

_LIVES = re.compile(r"\bI (?:live|moved) (?:in|to) ([A-Z][A-Za-z ]+?)[.!]?$")


def city_ops(turn: Turn, candidates: Sequence[Candidate]) -> list[Op]:
    """A tiny deterministic extractor: 'I live in X' / 'I moved to X' -> home.city."""
    ops: list[Op] = []
    for message in turn.messages:
        if message.role != "user":
            continue
        match = _LIVES.search(message.text)
        if not match:
            continue
        content = f"Lives in {match.group(1).strip()}"
        current = next((c for c in candidates if c.key == "home.city"), None)
        if current is None:
            ops.append(Op.add(content, key="home.city", evidence=message.text))
        elif current.content != content:
            ops.append(Op.supersede(current.alias, content, evidence=message.text))
    return ops


class Gate:
    """``asyncio.Event`` across threads: the worker runs on its memory's own loop, the test
    on another, and either side may set what the other waits for."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._set = False
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []

    def is_set(self) -> bool:
        return self._set

    def set(self) -> None:
        with self._lock:
            self._set = True
            waiters, self._waiters = self._waiters, []
        for loop, waiter in waiters:
            with contextlib.suppress(RuntimeError):  # that loop is closed: nobody waits
                loop.call_soon_threadsafe(_wake, waiter)

    def clear(self) -> None:
        with self._lock:
            self._set = False

    async def wait(self) -> None:
        loop = asyncio.get_running_loop()
        with self._lock:
            if self._set:
                return
            waiter = loop.create_future()
            self._waiters.append((loop, waiter))
        await waiter


def _wake(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


@dataclass
class ScriptedExtractor:
    """Extractor double at the LLM boundary: a function of the turn and candidates."""

    rule: Callable[[Turn, Sequence[Candidate]], list[Op]] = city_ops
    name: str = "scripted"
    calls: list[tuple[Turn, tuple[Candidate, ...]]] = field(default_factory=list)

    async def extract(
        self, turn: Turn, candidates: Sequence[Candidate], now: datetime
    ) -> Extraction:
        self.calls.append((turn, tuple(candidates)))
        return Extraction(ops=tuple(self.rule(turn, candidates)))


@pytest.fixture
def extractor() -> ScriptedExtractor:
    return ScriptedExtractor()


@pytest.fixture
def engine(db: Database, embedder: HashingEmbedder) -> BeliefEngine:
    return BeliefEngine(db, embedder)


MemoryFactory = Callable[..., Memory]


@pytest.fixture
async def memories(
    engine: BeliefEngine, extractor: ScriptedExtractor
) -> AsyncIterator[MemoryFactory]:
    """Make ``Memory`` objects on the test's engine (the test's extractor by default);
    every one is closed after the test, so no worker outlives it."""
    opened: list[Memory] = []

    def make(**options: Any) -> Memory:
        if "clock" in options and "engine" not in options:  # the engine keeps the clock
            options["engine"] = BeliefEngine(engine.db, engine.embedder, clock=options["clock"])
        options.setdefault("engine", engine)
        options.setdefault("extractor", extractor)
        memory = Memory(**options)
        opened.append(memory)
        return memory

    yield make
    for memory in opened:
        await memory.aclose()


@pytest.fixture
def memory(memories: MemoryFactory) -> Memory:
    return memories()


@pytest.fixture
def make_session(
    memory: Memory, memories: MemoryFactory, tmp_path: Path
) -> Callable[..., Mem01Session]:
    """Sessions on the test's memory; ``extractor=`` gives the session a memory of its own
    with that extractor (same database)."""

    def make(
        session_id: str, user_id: str = "user-1", *, extractor: Any = None, **kwargs: Any
    ) -> Mem01Session:
        kwargs.setdefault("inner", SQLiteSession(session_id, tmp_path / "transcripts.sqlite"))
        kwargs.setdefault("memory", memory if extractor is None else memories(extractor=extractor))
        return Mem01Session(session_id, user_id, **kwargs)

    return make
