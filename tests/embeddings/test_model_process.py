"""The embedding process: the model's vectors from a process of its own, and its lifecycle.

Real child processes throughout (``python -m mem01session.embeddings.minilm.child``).
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from mem01session import Settings
from mem01session.embeddings import default_embedder
from mem01session.embeddings.minilm import process as model_process
from mem01session.embeddings.minilm.embedder import MiniLMEmbedder
from mem01session.embeddings.minilm.model import ModelKey
from mem01session.embeddings.minilm.process import ModelProcess
from mem01session.errors import ConfigError, EmbeddingError
from tests.child_env import ended, not_python

pytestmark = pytest.mark.slow  # starts processes (see tests/spawns.py)

TEXTS = ["Do I have a dog?", "I moved to SF on Wednesday.", "", "rent " * 300, "naïve café ☕"]
BATCHING = (32, 1024)


@pytest.fixture
def process() -> Iterator[ModelProcess]:
    """A process of the test's own (not the one the embedders share)."""
    proc = ModelProcess(ModelKey(None, True, 1), BATCHING)
    yield proc
    proc.close()


async def test_vectors_equal_the_models_in_this_process() -> None:
    here = MiniLMEmbedder(own_process=False, recent_texts=0)
    there = MiniLMEmbedder(recent_texts=0)
    assert np.array_equal(np.array(await there.embed(TEXTS)), np.array(await here.embed(TEXTS)))
    # one short text is a query (the child's lane); the same vector as in a batch
    [query] = await there.embed([TEXTS[0]])
    assert np.array_equal(np.array(query), np.array((await here.embed(TEXTS[:1]))[0]))
    assert there.embed_sync(TEXTS[1:2]) == await here.embed(TEXTS[1:2])


def test_one_process_serves_every_event_loop_and_embedder() -> None:
    a, b = MiniLMEmbedder(recent_texts=0), MiniLMEmbedder(recent_texts=0)
    first = asyncio.run(a.embed(["Where do I live?"]))
    second = asyncio.run(b.embed(["Where do I live?"]))  # another loop, another embedder
    assert first == second
    assert a._process is b._process and a._process is not None
    assert a._process.pid is not None and a._process.pid != os.getpid()


async def test_many_concurrent_queries_each_get_their_own_vector(
    process: ModelProcess,
) -> None:
    texts = [f"question number {i} about my dog" for i in range(40)]
    futures = [process.submit([t], query=True) for t in texts]
    got = await asyncio.gather(*map(asyncio.wrap_future, futures))
    expected = process.embed(texts)
    assert np.allclose(np.vstack(got), expected, atol=1e-6)


async def test_the_model_never_loads_in_the_parent(tmp_path: Path) -> None:
    script = textwrap.dedent(
        """
        import asyncio, sys
        from mem01session.embeddings.minilm.embedder import MiniLMEmbedder
        emb = MiniLMEmbedder()
        print(emb.load() > 0, len(asyncio.run(emb.embed(["hello"]))[0]))
        print("onnxruntime" in sys.modules)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True
    )
    assert out.stdout.split() == ["True", "384", "False"]


def test_a_child_killed_mid_request_fails_that_request_and_the_next_one_restarts(
    process: ModelProcess,
) -> None:
    process.load()
    pid = process.pid
    assert pid is not None
    os.kill(pid, signal.SIGSTOP)  # holds the request below in flight
    future = process.submit(["hello"], query=True)
    os.kill(pid, signal.SIGKILL)
    with pytest.raises(EmbeddingError, match=rf"embedding process \(pid {pid}\) exited") as died:
        future.result(timeout=60)
    assert died.value.retryable  # the worker tries the turn again, with a new process
    vectors = process.embed(["hello", "again"])  # a new child
    assert vectors.shape == (2, 384) and process.pid not in (None, pid)


def test_a_child_that_cannot_start_says_so_and_is_not_restarted_at_once(
    process: ModelProcess, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(sys, "executable", not_python(tmp_path))
    cannot = r"exited with code 3 before answering anything.*EMBEDDING_PROCESS=0"
    with pytest.raises(EmbeddingError, match=cannot):
        process.embed(["hello"])
    spawned: list[int] = []
    monkeypatch.setattr(process, "_spawn", lambda: spawned.append(1))
    with pytest.raises(EmbeddingError, match="before answering anything"):
        process.embed(["hello"])
    assert spawned == []  # within the pause: the cause is still there, no new process


def test_a_missing_interpreter_is_a_clear_error(
    process: ModelProcess, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(sys, "executable", str(tmp_path / "no-python"))
    with pytest.raises(EmbeddingError, match="could not start the embedding process"):
        process.embed(["hello"])


def test_a_bad_model_file_is_reported_from_the_child(tmp_path: Path) -> None:
    bad = tmp_path / "model.onnx"
    bad.write_bytes(b"not a model")
    emb = MiniLMEmbedder(model_path=bad)
    with pytest.raises(EmbeddingError, match="sha256 expected") as refused:
        emb.load()
    assert not refused.value.retryable  # the same file fails the same way
    with pytest.raises(EmbeddingError, match="sha256 expected"):
        emb.embed_sync(["hello"])  # the child is still there, and says it again
    assert emb._process is not None and emb._process.pid is not None


def test_close_stops_the_child(process: ModelProcess) -> None:
    process.load()
    pid = process.pid
    assert pid is not None
    process.close()
    assert ended(pid, timeout=0)  # close waits for it to exit


def test_the_child_ends_when_its_parent_is_killed() -> None:
    script = textwrap.dedent(
        """
        import os, signal
        from mem01session.embeddings.minilm.embedder import MiniLMEmbedder
        emb = MiniLMEmbedder()
        emb.embed_sync(["hello"])
        print(emb._process.pid, flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == -signal.SIGKILL
    child = int(out.stdout.strip())
    assert ended(child)  # its stdin ended with the parent


def test_the_setting_chooses_where_the_model_runs() -> None:
    own = default_embedder(Settings.from_env({}))
    here = default_embedder(Settings.from_env({"MEM01_EMBEDDING_PROCESS": "0"}))
    assert isinstance(own, MiniLMEmbedder) and isinstance(here, MiniLMEmbedder)
    assert "own_process=True" in repr(own) and "own_process=False" in repr(here)
    with pytest.raises(ConfigError, match="MEM01_EMBEDDING_PROCESS must be 1 or 0, got 'x'"):
        Settings.from_env({"MEM01_EMBEDDING_PROCESS": "x"})


def test_embedders_with_the_same_options_share_one_process() -> None:
    key = ModelKey(None, True, 1)
    assert model_process.model_process(key, BATCHING) is model_process.model_process(key, BATCHING)
    assert model_process.model_process(key, (8, 1024)) is not model_process.model_process(
        key, BATCHING
    )


def test_a_forked_process_starts_its_own_and_leaves_the_parents_alone(
    process: ModelProcess,
) -> None:
    process.load()
    parent_child = process.pid
    assert parent_child is not None
    pid = os.fork()
    if pid == 0:  # the forked process: only this thread; exits without pytest's cleanup
        code = 1
        try:
            vectors = process.embed(["from the fork"])
            mine = process.pid
            code = 0 if vectors.shape == (1, 384) and mine not in (None, parent_child) else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    # the parent's child still answers, and is still the same process
    assert process.embed(["from the parent"]).shape == (1, 384)
    assert process.pid == parent_child
    process.close()
    assert ended(parent_child)  # no copy of its stdin left open anywhere


def test_a_child_that_never_loads_the_model_is_a_clear_error_not_a_hang(
    process: ModelProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    process.load()
    monkeypatch.setattr(model_process, "LOAD_TIMEOUT", 0.5)
    pid = process.pid
    assert pid is not None
    os.kill(pid, signal.SIGSTOP)  # stuck, as on a hung file system
    try:
        with pytest.raises(EmbeddingError, match=r"did not load the model within 0\.5 s"):
            process.load()
    finally:
        os.kill(pid, signal.SIGCONT)
    monkeypatch.undo()
    assert process.load() >= 0  # it answers again once it runs


async def test_a_vector_comes_back_to_the_cache_after_its_caller_gave_up() -> None:
    """A run whose recall ran out of time stops waiting for its query's vector; the vector
    is kept when it comes, so the worker does not embed the same words again."""
    emb = MiniLMEmbedder(batch_size=27)  # a process of this test's own
    emb.load()
    assert emb._process is not None and emb._process.pid is not None
    pid = emb._process.pid
    os.kill(pid, signal.SIGSTOP)  # the answer cannot come before the caller gives up
    try:
        waiting = asyncio.ensure_future(emb.embed(["I moved to Porto."]))
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(asyncio.shield(waiting), 0.01)
        waiting.cancel()
    finally:
        os.kill(pid, signal.SIGCONT)
    assert emb.recent_vector("I moved to Porto.") is None
    await emb.embed(["a later query"])  # answered after the first: its vector is kept by now
    kept = emb.recent_vector("I moved to Porto.")
    assert kept is not None
    assert kept == (await MiniLMEmbedder(recent_texts=0).embed(["I moved to Porto."]))[0]


async def test_a_long_query_is_not_queued_behind_the_batches_ahead_of_it() -> None:
    """A run's query of a pasted text went to the bulk thread, behind the worker's batches
    (seconds of them after another long message); it goes to the query lane like any."""
    embedder = MiniLMEmbedder(batch_size=16, max_batch_tokens=512, recent_texts=0)
    process = embedder._process  # a process of this test's own batching
    assert process is not None
    try:
        bulk = process.submit(
            [f"passage {i} about the garden " * 25 for i in range(300)], query=False
        )
        [vector] = await embedder.embed(["Where do I live now? " * 60])
        assert len(vector) == 384
        assert not bulk.done()  # answered while the batches ahead of it still ran
    finally:
        process.close()
