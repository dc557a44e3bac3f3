"""Extractor failures at the HTTP boundary: timeouts, 5xx, malformed and partial output.

The real OpenAIExtractor talks to a fake OpenAI server (httpx2 MockTransport); the real
worker runs the job under an injected clock. Each failure is retried with growing
backoff (inside the extractor for 5xx, across job attempts in the worker), then the job
is ``failed`` with a clear error; nothing of a rejected batch is applied; and
``mem01session jobs retry ID`` sends it back so that it applies once.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import httpx2
import pytest
from click.testing import Result
from sqlalchemy import text
from typer.testing import CliRunner

from mem01session import Settings
from mem01session.cli import app
from mem01session.db import Database
from mem01session.embeddings import HashingEmbedder
from mem01session.engine import BeliefEngine
from mem01session.engine.ops import Op, Provenance
from mem01session.extraction import OpenAIExtractor, TurnMessage
from mem01session.queue import JobStore
from mem01session.queue.worker import MemoryWorker, WorkerPolicy
from tests.conftest import TEST_DIM
from tests.extraction.test_openai_extractor import completion, error, op
from tests.reliability.harness import snapshot

USER = "fay"
SETTINGS = Settings(openai_api_key="sk-test-fake-key-000000", llm_model="gpt-test")


async def cli(*args: str) -> Result:
    """The CLI runs its own event loop: invoke it from a thread."""
    return await asyncio.to_thread(CliRunner().invoke, app, list(args))


class Clock:
    """Wall-clock time until the test moves it (the CLI's retry uses the wall clock)."""

    def __init__(self) -> None:
        self.now = datetime.now(UTC)

    def __call__(self) -> datetime:
        return self.now


class Server:
    """A fake OpenAI server answering with ``answer()`` each time; counts the calls."""

    def __init__(self, answer: Callable[[], httpx2.Response]) -> None:
        self.answer = answer
        self.calls = 0
        self.sleeps: list[float] = []

    def handler(self, request: httpx2.Request) -> httpx2.Response:
        self.calls += 1
        return self.answer()

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)

    def extractor(self) -> OpenAIExtractor:
        client = httpx2.AsyncClient(transport=httpx2.MockTransport(self.handler))
        return OpenAIExtractor(
            SETTINGS, http_client=client, sleep=self.sleep, max_retries=2, backoff=0.5
        )


def raise_timeout() -> httpx2.Response:
    raise httpx2.ReadTimeout("timed out")


def good_answer() -> httpx2.Response:
    return completion(json.dumps({"ops": [op("ADD", content="Lives in Porto", key="home.city")]}))


FAILURES: dict[str, tuple[Callable[[], httpx2.Response], str]] = {
    "timeout": (raise_timeout, "did not answer within"),
    "5xx": (lambda: error(503, "overloaded"), "HTTP 503"),
    "malformed": (lambda: completion("Sure! Here are the ops you asked for."), "not valid JSON"),
    "partial json": (
        lambda: completion('{"ops": [{"op": "ADD", "content": "Lives in Po'),
        "not valid JSON",
    ),
    "half-valid batch": (
        lambda: completion(
            json.dumps(
                {
                    "ops": [
                        op("ADD", content="Lives in Porto", key="home.city"),
                        op("INVALIDATE", target="b7", reason="gone"),
                    ]
                }
            )
        ),
        "unknown candidate alias 'b7'",
    ),
}


@pytest.mark.parametrize("failure", list(FAILURES))
async def test_failures_retry_with_backoff_then_fail_then_jobs_retry_applies_once(
    failure: str,
    db: Database,
    db_url: str,
    embedder: HashingEmbedder,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    answer, message = FAILURES[failure]
    server = Server(answer)
    clock = Clock()
    engine = BeliefEngine(db, embedder, clock=clock)
    policy = WorkerPolicy(max_attempts=3, backoff_base=2.0)
    worker = MemoryWorker(engine, server.extractor(), policy=policy)
    await engine.apply(USER, [Op.add("Likes tea")], provenance=Provenance(extractor="seed"))
    job_id = await JobStore(db).enqueue(
        USER, "conv", [TurnMessage("user", "I moved to Porto.")], now=clock()
    )
    before = await snapshot(db.sa_engine, USER)

    delays = []
    for attempt in range(1, policy.max_attempts + 1):
        assert await worker.run_once() == 1
        (job,) = (await JobStore(db).statuses(USER, [job_id])).values()
        assert job.attempts == attempt and message in (job.last_error or "")
        async with db.sa_engine.connect() as conn:
            run_after = await conn.scalar(
                text("SELECT run_after FROM memory_jobs WHERE id = :i"), {"i": job_id}
            )
        if attempt < policy.max_attempts:
            assert job.status == "pending"
            delays.append(run_after - clock.now)
            assert await worker.run_once() == 0  # backing off: not retried yet
            clock.now = run_after
    assert delays == [timedelta(seconds=2), timedelta(seconds=4)]  # exponential
    assert job.status == "failed"
    if failure == "5xx":  # transient HTTP errors are also retried inside the extractor
        assert server.sleeps == [0.5, 1.0] * policy.max_attempts
        assert server.calls == 3 * policy.max_attempts
    # Nothing of the failed job reached the beliefs, ledger or provenance; its words were
    # kept (an episode), so that what was said is not lost to a failing extractor.
    after = await snapshot(db.sa_engine, USER)
    for table in ("beliefs", "belief_events", "belief_sources"):
        assert after[table] == before[table], table
    [said] = await engine.episodes(USER)
    assert (said.content, said.job_id) == ("I moved to Porto.", job_id)

    # The operator sends it back; the model answers properly this time.
    monkeypatch.setenv("MEM01_DATABASE_URL", db_url)
    monkeypatch.setenv("MEM01_EMBEDDING_MODEL", HashingEmbedder(TEST_DIM).name)
    result = await cli("jobs", "retry", str(job_id))
    assert result.exit_code == 0, result.output
    assert f"job #{job_id}" in result.output and "pending" in result.output
    again = await cli("jobs", "retry", str(job_id))
    assert again.exit_code == 1 and f"no failed job #{job_id}" in again.output
    server.answer = good_answer
    assert await worker.run_once() == 1
    assert await worker.run_once() == 0
    (job,) = (await JobStore(db).statuses(USER, [job_id])).values()
    assert job.status == "done"
    beliefs = [b for b in await engine.history(USER) if b.status == "active"]
    assert sorted(b.content for b in beliefs) == ["Likes tea", "Lives in Porto"]
    assert len((await snapshot(db.sa_engine, USER))["belief_events"]) == 2
    # The retried turn's belief points at the words kept at the failure, kept once.
    porto = next(b for b in beliefs if b.content == "Lives in Porto")
    assert [s.episode_id for s in porto.sources] == [said.id]
    assert [e.id for e in await engine.episodes(USER)] == [said.id]
