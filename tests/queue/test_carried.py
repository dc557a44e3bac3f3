"""Vectors a turn carries to a worker of another process (queue/carried_vectors.py)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from agents.memory import SQLiteSession

from mem01session import Mem01Session, Memory
from mem01session.db import Database
from mem01session.embeddings import HashingEmbedder, Vector
from mem01session.engine import BeliefEngine
from mem01session.extraction import RuleExtractor
from mem01session.queue import MemoryWorker
from mem01session.queue.carried_vectors import carried, carry
from tests.conftest import TEST_DIM
from tests.reliability.harness import say


class Recording:
    """The hashing embedder, recording what it computes and keeping what it computed."""

    def __init__(self) -> None:
        self.inner = HashingEmbedder(TEST_DIM)
        self.computed: list[str] = []
        self.recent: dict[str, Vector] = {}

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def dim(self) -> int:
        return self.inner.dim

    async def embed(self, texts: Sequence[str]) -> list[Vector]:
        self.computed += texts
        vectors = await self.inner.embed(texts)
        self.recent.update(zip(texts, vectors, strict=True))
        return vectors

    def recent_vector(self, text: str) -> Vector | None:
        return self.recent.get(text)


def test_a_carried_vector_comes_back_only_for_its_model_and_dimension() -> None:
    vector = [0.5, -0.25, 0.125]
    entry = carry(["hi", "", "hi", "unknown"], {"hi": vector}.get, "m1")
    assert entry is not None and set(entry["of"]) == {"hi"}
    payload = {"vectors": entry}
    assert carried(payload, "m1", 3) == {"hi": vector}  # float32 round trip, exact here
    assert carried(payload, "m2", 3) == {} and carried(payload, "m1", 4) == {}
    assert carry(["x"], {}.get, "m1") is None
    garbage = {"vectors": {"model": "m1", "of": {"a": "%%%", "b": 3, "c": "AAAA"}}}
    assert carried(garbage, "m1", 3) == {} and carried({"vectors": "x"}, "m1", 3) == {}


async def test_the_worker_elsewhere_uses_the_runs_vector_and_the_row_drops_it(
    db: Database, tmp_path: Path
) -> None:
    app_embedder = Recording()
    memory = Memory(
        engine=BeliefEngine(db, app_embedder), extractor=RuleExtractor(), run_worker=False
    )
    inner = SQLiteSession("chat", tmp_path / "t.sqlite")
    session = Mem01Session("chat", "vera", inner=inner, memory=memory)
    await say(session, "I live in Lisbon.")
    assert "I live in Lisbon." in app_embedder.computed  # the run's recall embedded it
    rows = await db.direct.fetch("SELECT payload FROM memory_jobs WHERE user_id = 'vera'", {})
    assert set(rows[0]["payload"]["vectors"]["of"]) == {"I live in Lisbon."}

    # The worker of "another process": its own engine and embedder on the same database.
    worker_embedder = Recording()
    worker = MemoryWorker(BeliefEngine(db, worker_embedder), RuleExtractor())
    assert await worker.run_once() == 1
    assert "I live in Lisbon." not in worker_embedder.computed  # carried, not embedded again
    assert worker_embedder.computed  # the extractor's statement was embedded there
    rows = await db.direct.fetch(
        "SELECT status, payload FROM memory_jobs WHERE user_id = 'vera'", {}
    )
    assert rows[0]["status"] == "done" and "vectors" not in rows[0]["payload"]
    result = await session.recall("Where do I live?")
    assert "Lisbon" in result.text
    await memory.aclose()


async def test_words_that_lost_a_secret_carry_no_vector(db: Database, tmp_path: Path) -> None:
    embedder = Recording()
    memory = Memory(engine=BeliefEngine(db, embedder), extractor=RuleExtractor(), run_worker=False)
    session = Mem01Session("chat", "wes", inner=SQLiteSession("c", tmp_path / "t"), memory=memory)
    said = "My password is hunter2hunter2."
    await say(session, said)
    assert said in embedder.computed  # the run embedded the words as said
    rows = await db.direct.fetch("SELECT payload FROM memory_jobs WHERE user_id = 'wes'", {})
    payload = rows[0]["payload"]
    assert "hunter2" not in str(payload) and "vectors" not in payload
    await memory.aclose()


async def test_a_refused_turn_of_an_erased_user_keeps_neither_words_nor_vectors(
    db: Database,
) -> None:
    """An erase that commits between an enqueue's check and its insert leaves a job that
    the worker refuses: its words leave the row, and the vectors made of them too."""
    from datetime import UTC, datetime

    from mem01session.queue import JobStore, TurnMessage

    said = "I live in Rome."
    vectors = {said: [0.25] * TEST_DIM}
    await JobStore(db).enqueue(
        "yan", "chat", [TurnMessage("user", said)], now=datetime.now(UTC),
        known=vectors.get, model=HashingEmbedder(TEST_DIM).name,
    )  # fmt: skip
    await db.direct.fetch(
        "INSERT INTO memory_users (user_id, erased_at) VALUES ('yan', now())", {}
    )  # the erase, committed after the check
    worker = MemoryWorker(BeliefEngine(db, Recording()), RuleExtractor())
    assert await worker.run_once() == 1
    rows = await db.direct.fetch(
        "SELECT status, payload FROM memory_jobs WHERE user_id = 'yan'", {}
    )
    assert rows[0]["status"] == "failed"
    assert "vectors" not in rows[0]["payload"] and "Rome" not in str(rows[0]["payload"])
