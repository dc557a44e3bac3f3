"""One database, two embedding models: vectors are never compared across models, and
``reembed`` converts the old ones (real PostgreSQL, real MiniLM and hashing embedders)."""

from __future__ import annotations

import pytest
from agents.memory import SQLiteSession
from sqlalchemy import text

from mem01session import Mem01Session, Memory, Op, Provenance, Settings
from mem01session.db import Database
from mem01session.embeddings import HashingEmbedder, MiniLMEmbedder
from mem01session.engine import BeliefEngine, RecallRequest
from tests.reliability.harness import say

pytestmark = pytest.mark.slow  # starts processes (see tests/spawns.py)

PROV = Provenance(session_id="s1", extractor="test")


async def test_switching_embedders_never_mixes_vectors_and_reembed_converts_them(
    db: Database, embedder: HashingEmbedder
) -> None:
    before = BeliefEngine(db, embedder)  # the hashing model the database began with
    await before.apply(
        "ivo", [Op.add("Has a beagle named Max"), Op.add("Plays chess")], provenance=PROV
    )
    after = BeliefEngine(db, MiniLMEmbedder())  # then the application switches models
    await after.apply("ivo", [Op.add("Lives in Lisbon")], provenance=PROV)

    # 64-d and 384-d vectors side by side: a comparison across them would fail loudly.
    found = await after.recall("ivo", RecallRequest("beagle Max", explain=True))
    [beagle] = [s for s in found.beliefs if s.belief.content == "Has a beagle named Max"]
    assert beagle.signals["other_model"] == 1.0 and beagle.signals["vector_rank"] == 0.0
    assert found.other_model_candidates >= 1  # reported: found by full text only
    dog = await after.recall("ivo", RecallRequest("Do I have a dog?"))
    assert "beagle" not in dog.text  # no shared word, and no vector of this model yet
    home = await after.search("ivo", RecallRequest("Where do I live?"), limit=1)
    assert home[0].belief.content == "Lives in Lisbon"  # its own vectors work meanwhile
    assert await after.count_other_model("ivo") == 2

    done: list[int] = []
    report = await after.reembed(user_id="ivo", batch_size=1, progress=done.append)
    assert (report.found, report.converted, report.skipped) == (2, 2, 0) and sum(done) == 2
    assert await after.count_other_model() == 0
    dog = await after.recall("ivo", RecallRequest("Do I have a dog?"))
    assert dog.beliefs[0].belief.content == "Has a beagle named Max"  # semantic now
    again = await after.reembed()
    assert again.converted == 0  # resumable: nothing left to do
    async with db.sa_engine.connect() as conn:
        models = (
            (await conn.execute(text("SELECT DISTINCT embedding_model FROM beliefs")))
            .scalars()
            .all()
        )
    assert models == ["all-MiniLM-L6-v2"]


async def test_reembed_leaves_a_belief_revised_meanwhile_alone(
    db: Database, embedder: HashingEmbedder
) -> None:
    old = BeliefEngine(db, embedder)
    result = await old.apply("ula", [Op.add("Likes tea")], provenance=PROV)
    [tea] = [c.belief_id for c in result.changes]
    new = BeliefEngine(db, MiniLMEmbedder())

    # The belief is revised (by an application already on the new model) before the
    # re-embedding writes: the statement sees the text changed and leaves the belief alone.
    await new.apply("ula", [Op.update(tea, "Likes green tea")], provenance=PROV)
    async with db.sa_engine.begin() as conn:
        await conn.execute(  # put back an old-model vector, as if written by the old app
            text("UPDATE beliefs SET embedding_model = 'mem01-offline-hash-v1-64' WHERE id = :i"),
            {"i": tea},
        )
    report = await new.reembed()
    assert report.converted == 1  # once current, the same belief is never touched again
    assert (await new.reembed()).converted == 0


@pytest.mark.parametrize("model", ["all-MiniLM-L6-v2", None])
async def test_the_default_configuration_recalls_by_meaning_through_the_runner(
    db_url: str, tmp_path: object, model: str | None
) -> None:
    settings = Settings(database_url=db_url, home=tmp_path, embedding_model=model)  # type: ignore[arg-type]
    async with Memory(settings) as memory:
        assert isinstance((await memory.engine()).embedder, MiniLMEmbedder)
        store = tmp_path / "t.sqlite"  # type: ignore[operator]
        monday = Mem01Session("mon", "pia", inner=SQLiteSession("mon", store), memory=memory)
        await say(monday, "I adopted a beagle named Max last spring.")
        assert await monday.flush_memory(timeout=60)
        friday = Mem01Session("fri", "pia", inner=SQLiteSession("fri", store), memory=memory)
        model_seen = await say(friday, "Do I have a dog?")
    assert "Has a beagle named Max" in str(model_seen.calls[0].input)


async def test_a_turn_is_embedded_once_and_erase_forgets_the_vectors_kept(
    db_url: str, tmp_path: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The run's recall embeds the user's words as its query; the worker's search for the
    extractor's candidates and the turn's episode reuse that vector (the real model runs
    once for those words). Erasing a user drops every vector kept of recent texts."""
    from mem01session.embeddings.minilm.process import ModelProcess

    encoded: list[str] = []
    real = ModelProcess.submit

    def counting(self: ModelProcess, texts: list[str], *, query: bool) -> object:
        encoded.extend(texts)  # what is sent to the embedding process
        return real(self, texts, query=query)

    monkeypatch.setattr(ModelProcess, "submit", counting)
    settings = Settings(database_url=db_url, home=tmp_path, embedding_model="all-MiniLM-L6-v2")  # type: ignore[arg-type]
    words = "I adopted a beagle named Max last spring."
    async with Memory(settings) as memory:
        engine = await memory.engine()
        store = tmp_path / "t.sqlite"  # type: ignore[operator]
        monday = Mem01Session("mon", "pia", inner=SQLiteSession("mon", store), memory=memory)
        await say(monday, words)
        assert await monday.flush_memory(timeout=60)
        assert encoded.count(words) == 1  # the recall's query; the worker reused it
        async with engine.db.sa_engine.connect() as conn:
            said = await conn.execute(
                text(
                    "SELECT content FROM episodes WHERE user_id = 'pia' AND role = 'user' "
                    "AND embedding_model = 'all-MiniLM-L6-v2'"
                )
            )
            assert said.scalars().all() == [words]  # its episode, with the model's vector

        question = "Do I have a dog?"
        first = await engine.recall("pia", RecallRequest(question))
        assert "beagle" in first.text and encoded.count(question) == 1
        await engine.recall("pia", RecallRequest(question))
        assert encoded.count(question) == 1  # asked again: the kept vector

        await engine.erase_user("pia")
        await engine.recall("pia", RecallRequest(question))
        assert encoded.count(question) == 2  # nothing kept after the erase: embedded again
