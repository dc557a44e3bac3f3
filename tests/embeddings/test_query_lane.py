"""QueryLane: one thread embeds every caller's short texts, batching those that wait."""

from __future__ import annotations

import asyncio
import os
import threading

import numpy as np
import pytest

from mem01session.embeddings.minilm.query_lane import Float32Array, QueryLane
from tests.child_env import fork_exit_code


class Gate:
    """An ``infer`` that records each call's texts and waits for the test to let it go."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []
        self.threads: set[str] = set()
        self.entered = threading.Event()
        self.release = threading.Event()

    def __call__(self, texts: list[str]) -> Float32Array:
        self.calls.append(list(texts))
        self.threads.add(threading.current_thread().name)
        self.entered.set()
        self.release.wait(30)
        if "boom" in texts:
            raise RuntimeError("model failed")
        return np.array([[float(len(t)), float(i)] for i, t in enumerate(texts)], np.float32)


async def test_texts_queued_while_busy_are_embedded_in_one_call() -> None:
    gate = Gate()
    lane = QueryLane(gate, max_texts=8)
    first = asyncio.ensure_future(lane.embed(["a"]))
    await asyncio.to_thread(gate.entered.wait, 30)  # the lane is busy with "a"
    rest = [asyncio.ensure_future(lane.embed([t])) for t in ("bb", "ccc", "dddd")]
    await asyncio.sleep(0)  # every request is queued before the lane is let go
    gate.release.set()
    got = await asyncio.gather(first, *rest)
    assert gate.calls == [["a"], ["bb", "ccc", "dddd"]]
    # Each caller gets its own rows, in its own order.
    assert [row[0][0] for row in got] == [1.0, 2.0, 3.0, 4.0]
    assert gate.threads == {"mem01-embed"}  # never the event loop's thread


async def test_a_call_never_takes_more_than_max_texts_nor_splits_a_request() -> None:
    gate = Gate()
    lane = QueryLane(gate, max_texts=3)
    first = asyncio.ensure_future(lane.embed(["x"]))
    await asyncio.to_thread(gate.entered.wait, 30)
    pair = asyncio.ensure_future(lane.embed(["p", "q"]))
    trio = asyncio.ensure_future(lane.embed(["r", "s", "t"]))
    await asyncio.sleep(0)
    gate.release.set()
    await asyncio.gather(first, pair, trio)
    assert gate.calls == [["x"], ["p", "q"], ["r", "s", "t"]]


async def test_a_long_text_is_embedded_alone_not_padding_the_short_ones() -> None:
    gate = Gate()
    lane = QueryLane(gate, max_texts=8)
    pasted = "pasted " * 40  # over SHORT_CHARS
    first = asyncio.ensure_future(lane.embed(["x"]))
    await asyncio.to_thread(gate.entered.wait, 30)
    queued = [asyncio.ensure_future(lane.embed([t])) for t in ("a", pasted, "b", "c")]
    await asyncio.sleep(0)
    gate.release.set()
    await asyncio.gather(first, *queued)
    assert gate.calls == [["x"], ["a"], [pasted], ["b", "c"]]


async def test_a_failure_reaches_its_callers_and_the_lane_goes_on() -> None:
    gate = Gate()
    gate.release.set()
    lane = QueryLane(gate, max_texts=4)
    with pytest.raises(RuntimeError, match="model failed"):
        await lane.embed(["boom"])
    rows = await lane.embed(["fine"])
    assert rows.shape == (1, 2) and rows[0][0] == 4.0


async def test_a_short_answer_of_the_model_is_an_error_not_a_shifted_vector() -> None:
    calls = 0

    def short(texts: list[str]) -> Float32Array:
        nonlocal calls
        calls += 1
        rows = np.ones((len(texts), 2), np.float32)
        return rows[:-1] if calls == 1 else rows

    lane = QueryLane(short, max_texts=4)
    with pytest.raises(RuntimeError, match="returned 0 rows for 1 texts"):
        await lane.embed(["a"])
    assert (await lane.embed(["b"])).shape == (1, 2)


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
def test_a_forked_process_gets_a_lane_thread_of_its_own() -> None:
    lane = QueryLane(lambda texts: np.ones((len(texts), 2), np.float32), max_texts=8)
    assert lane.submit(["in the parent"]).result(30).shape == (1, 2)  # its thread runs
    pid = os.fork()
    if pid == 0:  # the forked process: the parent's thread is not in it
        try:
            ok = lane.submit(["in the fork"]).result(10).shape == (1, 2)
        except BaseException:
            ok = False
        os._exit(0 if ok else 1)
    assert fork_exit_code(pid) == 0
    assert lane.submit(["the parent again"]).result(30).shape == (1, 2)
