"""MiniLMEmbedder: all-MiniLM-L6-v2 int8 ONNX against fp32 reference vectors, and its edges.

The reference vectors (minilm_reference.json) come from sentence-transformers on torch,
made by bench/make_minilm_reference.py in a throwaway virtualenv. The model loads once
for this module (the embedder shares it per process).
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import random
import shutil
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from mem01session import Settings
from mem01session.embeddings import default_embedder
from mem01session.embeddings.minilm import model as minilm_model
from mem01session.embeddings.minilm.embedder import MiniLMEmbedder, _batches
from mem01session.errors import ConfigError, EmbeddingError
from tests.child_env import fork_exit_code

pytestmark = pytest.mark.slow  # starts processes (see tests/spawns.py)

REFERENCE = json.loads(Path(__file__).with_name("minilm_reference.json").read_text())
ITEMS: list[dict[str, Any]] = REFERENCE["items"]


def cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)))


@pytest.fixture(scope="module")
def embedder() -> MiniLMEmbedder:
    emb = MiniLMEmbedder(recent_texts=0)  # every call computes: what these tests compare
    emb.load()
    return emb


@pytest.fixture(scope="module")
def vectors(embedder: MiniLMEmbedder) -> list[list[float]]:
    return embedder.embed_sync([item["text"] for item in ITEMS])


def test_reference_fixture_covers_the_edges() -> None:
    texts = [item["text"] for item in ITEMS]
    assert "" in texts and len(texts) >= 40
    assert max(item["tokens"] for item in ITEMS) > minilm_model.MAX_TOKENS  # exercises truncation
    assert any(not t.isascii() for t in texts)


@pytest.mark.parametrize("index", range(len(ITEMS)), ids=lambda i: repr(ITEMS[i]["text"][:30]))
def test_matches_fp32_sentence_transformers(vectors: list[list[float]], index: int) -> None:
    # The int8 weights cost a little accuracy: 0.9993-0.9997 on sentences of 8+ tokens,
    # down to 0.995 on near-empty inputs ("!!!", "", "ok") where few tokens are averaged.
    item = ITEMS[index]
    floor = 0.999 if item["tokens"] >= 8 else 0.995
    assert cosine(vectors[index], item["vector"]) >= floor


def test_mean_cosine_over_the_reference_set(vectors: list[list[float]]) -> None:
    cosines = [cosine(v, item["vector"]) for v, item in zip(vectors, ITEMS, strict=True)]
    assert sum(cosines) / len(cosines) >= 0.999


async def test_vectors_are_384_unit_floats(embedder: MiniLMEmbedder) -> None:
    assert embedder.name == "all-MiniLM-L6-v2" and embedder.dim == 384
    out = await embedder.embed(["Lives in San Francisco.", "Allergic to peanuts."])
    assert len(out) == 2
    for vec in out:
        assert len(vec) == 384 and all(type(x) is float for x in vec)
        assert math.isclose(math.sqrt(sum(x * x for x in vec)), 1.0, abs_tol=1e-5)
    assert await embedder.embed([]) == []


async def test_batches_equal_one_by_one_in_input_order(embedder: MiniLMEmbedder) -> None:
    texts = [item["text"] for item in ITEMS]
    random.Random(7).shuffle(texts)
    texts.append(texts[0])  # a duplicate comes back twice
    small_batches = MiniLMEmbedder(batch_size=4)  # many length-sorted batches
    together = await small_batches.embed(texts)
    alone = [(await embedder.embed([t]))[0] for t in texts]
    assert len(together) == len(texts)
    for text, a, b in zip(texts, together, alone, strict=True):
        assert max(abs(x - y) for x, y in zip(a, b, strict=True)) < 1e-5, text
    assert together[0] == together[-1]


async def test_recent_texts_are_not_embedded_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """A turn's words are embedded by the run's recall and again by the worker: the second
    time costs no inference. Erase drops what is kept (forget_texts)."""
    from mem01session.embeddings.minilm.process import ModelProcess

    inferred: list[int] = []
    real = ModelProcess.submit

    def counting(self: ModelProcess, texts: Any, *, query: bool) -> Any:
        inferred.append(len(texts))  # what is sent to the embedding process
        return real(self, texts, query=query)

    monkeypatch.setattr(ModelProcess, "submit", counting)
    emb = MiniLMEmbedder(recent_texts=2)
    emb.load()
    [query] = await emb.embed(["Where do I live?"])
    both = await emb.embed(["Where do I live?", "Lives in Porto"])  # one of two is new
    assert both[0] == query and sum(inferred) == 2
    assert emb.embed_sync(["Lives in Porto"]) == [both[1]] and sum(inferred) == 2
    await emb.embed(["a third text"])  # the oldest of two kept leaves
    await emb.embed(["Where do I live?"])
    assert sum(inferred) == 4
    emb.forget_texts()
    await emb.embed(["a third text"])
    assert sum(inferred) == 5


def test_batches_are_length_sorted_and_bounded() -> None:
    sizes = [5, 256, 3, 40, 256, 7, 256, 256, 256, 12, 2]
    batches = _batches(sizes, batch_size=3, max_batch_tokens=1024)
    assert sorted(i for batch in batches for i in batch) == list(range(len(sizes)))
    flat = [sizes[i] for batch in batches for i in batch]
    assert flat == sorted(sizes)
    for batch in batches:
        assert len(batch) <= 3
        assert len(batch) * max(sizes[i] for i in batch) <= 1024
    assert _batches([300], batch_size=8, max_batch_tokens=100) == [[0]]


async def test_concurrent_calls_get_their_own_vectors(embedder: MiniLMEmbedder) -> None:
    texts = [item["text"] for item in ITEMS[:12]]
    expected = embedder.embed_sync(texts)
    results = await asyncio.gather(*(embedder.embed([t]) for t in texts))
    for (got,), want in zip(results, expected, strict=True):
        assert cosine(got, want) > 0.99999


async def test_empty_and_odd_texts_do_not_crash(embedder: MiniLMEmbedder) -> None:
    empty, blank, surrogate = await embedder.embed(["", "   ", "caf\ud800e"])
    assert math.isclose(math.sqrt(sum(x * x for x in empty)), 1.0, abs_tol=1e-5)
    assert empty == blank  # both tokenize to [CLS] [SEP]
    assert len(surrogate) == 384
    with pytest.raises(EmbeddingError, match="not one str"):
        await embedder.embed("a string, not a list")
    with pytest.raises(EmbeddingError, match="text #1 is a int"):
        await embedder.embed(["ok", 3])  # type: ignore[list-item]


async def test_long_text_is_truncated_not_rejected(embedder: MiniLMEmbedder) -> None:
    long_text = " ".join(["memory"] * 2000)
    [vec] = await embedder.embed([long_text])
    [prefix] = await embedder.embed([" ".join(["memory"] * 254)])  # + [CLS] [SEP] = 256
    assert cosine(vec, prefix) > 0.99999


async def test_a_dog_question_finds_the_dog_fact(embedder: MiniLMEmbedder) -> None:
    query, dog, *others = await embedder.embed(
        [
            "Do I have a dog?",
            "I adopted a beagle named Max last spring.",
            "Lives in San Francisco.",
            "Works as a nurse on night shifts.",
            "Is allergic to peanuts.",
            "Prefers vegetarian recipes.",
        ]
    )
    assert all(cosine(query, dog) > cosine(query, other) + 0.1 for other in others)


def test_instances_with_the_same_options_share_one_model() -> None:
    a, b = MiniLMEmbedder(), MiniLMEmbedder(batch_size=8)
    c = MiniLMEmbedder(intra_op_threads=2)
    assert minilm_model.runtime(a._key) is minilm_model.runtime(b._key)
    assert a._key != c._key
    # ... and one embedding process per model and batching, not one per instance; in
    # this process, one query lane (one thread) likewise.
    assert MiniLMEmbedder()._process is a._process and b._process is not a._process
    here = MiniLMEmbedder(own_process=False)
    assert here._lane is MiniLMEmbedder(own_process=False)._lane and here._process is None
    assert here._lane is not MiniLMEmbedder(own_process=False, batch_size=8)._lane


def _copy_model(tmp_path: Path) -> Path:
    copy = tmp_path / "model.onnx"
    with resources.as_file(
        resources.files(minilm_model.MODEL_PACKAGE) / minilm_model.MODEL_FILE
    ) as src:
        shutil.copyfile(src, copy)
    return copy


async def test_tampered_model_file_is_refused_with_both_hashes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy = _copy_model(tmp_path)
    with copy.open("ab") as f:
        f.write(b"\0")
    emb = MiniLMEmbedder(model_path=copy)
    with pytest.raises(EmbeddingError) as caught:
        await emb.embed(["hello"])
    message = str(caught.value)
    assert minilm_model.MODEL_SHA256 in message and str(copy) in message
    actual = message.split("actual ")[1][:64]
    assert len(actual) == 64 and actual != minilm_model.MODEL_SHA256
    with pytest.raises(EmbeddingError, match="sha256"):
        emb.load()  # a failed load is not cached as a success


async def test_model_path_from_the_environment_is_used(
    tmp_path: Path, embedder: MiniLMEmbedder
) -> None:
    copy = _copy_model(tmp_path)
    env = {"MEM01_EMBEDDING_MODEL_PATH": str(copy), "MEM01_EMBEDDING_MODEL_VERIFY": "0"}
    emb = default_embedder(Settings.from_env(env))  # "0": the documented opt-out
    assert isinstance(emb, MiniLMEmbedder)
    runtime = minilm_model.runtime(emb._key)
    assert runtime.source == str(copy.resolve()) and runtime.sha256 is None
    assert await emb.embed(["Do I have a dog?"]) == await embedder.embed(["Do I have a dog?"])


def test_missing_model_file_and_bad_options_are_clear(tmp_path: Path) -> None:
    with pytest.raises(EmbeddingError, match=r"cannot read the embedding model at .*nope\.onnx"):
        MiniLMEmbedder(model_path=tmp_path / "nope.onnx").load()
    with pytest.raises(ConfigError, match="MEM01_EMBEDDING_MODEL_VERIFY"):
        Settings.from_env({"MEM01_EMBEDDING_MODEL_VERIFY": "maybe"})
    with pytest.raises(ConfigError, match="intra_op_threads"):
        MiniLMEmbedder(intra_op_threads=0)
    with pytest.raises(ConfigError, match="batch_size"):
        MiniLMEmbedder(batch_size=0)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
def test_a_forked_process_is_not_held_by_a_lock_the_parent_held_at_the_fork() -> None:
    with minilm_model._cache_lock:  # as a thread of the parent loading a model may hold it
        pid = os.fork()
        if pid == 0:  # the forked process
            minilm_model.clear_cache()  # takes the lock
            os._exit(0)
    assert fork_exit_code(pid) == 0  # not hung on the parent's lock
