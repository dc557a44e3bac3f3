"""Fixtures of the reliability suite; the shared machinery lives in ``harness.py``."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
from agents.memory import SQLiteSession

from mem01session.db import Database
from mem01session.embeddings import OfflineEmbedder
from mem01session.engine import BeliefEngine
from mem01session.session import Mem01Session
from mem01session.worker import stop_workers
from tests.session.conftest import ScriptedExtractor


@pytest.fixture
async def engine(db: Database, embedder: OfflineEmbedder) -> AsyncIterator[BeliefEngine]:
    eng = BeliefEngine(db, embedder)
    yield eng
    await stop_workers(eng)


@pytest.fixture
def extractor() -> ScriptedExtractor:
    return ScriptedExtractor()


@pytest.fixture
def make_session(
    engine: BeliefEngine, extractor: ScriptedExtractor, tmp_path: Path
) -> Callable[..., Mem01Session]:
    def make(session_id: str, user_id: str = "user-1", **kwargs: object) -> Mem01Session:
        kwargs.setdefault("inner", SQLiteSession(session_id, tmp_path / "transcripts.sqlite"))
        kwargs.setdefault("engine", engine)
        kwargs.setdefault("extractor", extractor)
        return Mem01Session(session_id, user_id, **kwargs)  # type: ignore[arg-type]

    return make
