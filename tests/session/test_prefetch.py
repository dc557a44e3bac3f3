"""RecallPrefetch: a run's recall started early is served once, to that run and query only."""

from __future__ import annotations

import asyncio
import gc

import pytest

from mem01session.session.injection import RecallPrefetch


class Recalls:
    """A stand-in for the session's recall: counts calls, answers with the query."""

    def __init__(self, fail: bool = False) -> None:
        self.started: list[str] = []
        self.fail = fail

    def __call__(self, query: str) -> asyncio.Future[str | None]:
        async def recall() -> str | None:
            self.started.append(query)
            if self.fail:
                raise RuntimeError("database down")
            return f"block for {query}"

        return asyncio.ensure_future(recall())


async def test_the_started_recall_is_served_to_its_run() -> None:
    recalls, prefetch = Recalls(), RecallPrefetch()
    prefetch.start((1, "where do I live"), lambda: recalls("where do I live"))
    task = prefetch.take((1, "where do I live"))
    assert task is not None and await task == "block for where do I live"
    assert prefetch.take((1, "where do I live")) is None  # served once
    assert recalls.started == ["where do I live"]


@pytest.mark.parametrize("other", [(2, "where do I live"), (1, "something else")])
async def test_another_run_or_query_is_not_served_and_the_early_recall_is_cancelled(
    other: tuple[int, str],
) -> None:
    recalls, prefetch = Recalls(), RecallPrefetch()
    prefetch.start((1, "where do I live"), lambda: recalls("where do I live"))
    assert prefetch.take(other) is None
    await asyncio.sleep(0)
    assert recalls.started == []  # cancelled before it ran


async def test_a_run_already_served_starts_no_second_recall() -> None:
    recalls, prefetch = Recalls(), RecallPrefetch()
    assert prefetch.take((1, "q")) is None  # streamed run: the model asked first
    prefetch.start((1, "q"), lambda: recalls("q"))  # then the input is stored
    await asyncio.sleep(0)
    assert recalls.started == []
    prefetch.start((2, "q"), lambda: recalls("q"))  # the next run does prefetch
    task = prefetch.take((2, "q"))
    assert task is not None and await task == "block for q"


async def test_a_failed_recall_nobody_takes_is_not_reported_as_unhandled(
    caplog: pytest.LogCaptureFixture,
) -> None:
    recalls, prefetch = Recalls(fail=True), RecallPrefetch()
    prefetch.start((1, "q"), lambda: recalls("q"))
    await asyncio.sleep(0)  # it runs and fails
    assert recalls.started == ["q"]
    prefetch.drop()
    await asyncio.sleep(0)
    gc.collect()  # an unretrieved task exception would be logged on collection
    assert "never retrieved" not in caplog.text


async def test_a_failed_recall_taken_by_its_run_raises_there() -> None:
    prefetch = RecallPrefetch()
    prefetch.start((1, "q"), lambda: Recalls(fail=True)("q"))
    task = prefetch.take((1, "q"))
    assert task is not None
    with pytest.raises(RuntimeError, match="database down"):
        await task
