"""Turns become beliefs after the answer, across conversations, per user, exactly once."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from agents import Agent, Runner, function_tool
from agents.testing import ScriptedModel, assistant_message, function_call
from sqlalchemy import text

from mem01session import Memory
from mem01session.db import Database
from mem01session.engine import BeliefEngine
from mem01session.engine.render import OPEN as MEMORY_MARKER
from mem01session.errors import InvalidOpError, Mem01MemoryError
from mem01session.session import Mem01Session, session_health
from tests.session.conftest import Gate, MemoryFactory, ScriptedExtractor


def turn(text: str) -> list[Any]:
    """One complete turn: the user's message and the assistant's answer."""
    return [{"role": "user", "content": text}, {"role": "assistant", "content": "Noted."}]


async def say(session: Mem01Session, text_in: str, answer: str = "Noted.") -> ScriptedModel:
    model = ScriptedModel([[assistant_message(answer)]])
    await Runner.run(
        Agent(name="a", model=model), text_in, session=session, run_config=session.run_config()
    )
    return model


async def active(engine: BeliefEngine, user_id: str) -> list[str]:
    return [b.content for b in await engine.history(user_id) if b.status == "active"]


async def test_beliefs_cross_conversations_but_never_users(
    make_session: Callable[..., Mem01Session], engine: BeliefEngine
) -> None:
    monday = make_session("monday", "alice")
    await say(monday, "I live in New York")
    assert await monday.flush_memory(timeout=30)

    friday = make_session("friday", "alice")
    model = await say(friday, "Where do I live?")
    assert "Lives in New York" in json.dumps(model.calls[0].input)
    assert [i.get("role") for i in await friday.get_items()] == ["user", "assistant"]

    bob = make_session("bob-conv", "bob")
    model = await say(bob, "Where do I live?")
    assert "New York" not in json.dumps(model.calls[0].input)
    assert await active(engine, "bob") == []


async def test_correction_in_b_overrides_stale_claim_in_a_transcript(
    make_session: Callable[..., Mem01Session], engine: BeliefEngine
) -> None:
    a = make_session("conv-a", "carol")
    await say(a, "I live in New York")
    assert await a.flush_memory(timeout=30)
    b = make_session("conv-b", "carol")
    await say(b, "I moved to San Francisco")
    assert await b.flush_memory(timeout=30)

    model = await say(a, "Where do I live now?")
    seen = json.dumps(model.calls[0].input)
    assert "I live in New York" in seen  # the stale claim is still in A's transcript
    block = next(i["content"] for i in model.calls[0].input if MEMORY_MARKER in str(i))
    assert "Lives in San Francisco" in block
    assert "Lives in New York" not in block  # superseded: not current truth
    assert "newer messages win" in block.lower()  # the precedence rule
    assert await active(engine, "carol") == ["Lives in San Francisco"]
    history = await engine.history("carol")
    assert [(b.content, b.status) for b in history] == [
        ("Lives in New York", "superseded"),
        ("Lives in San Francisco", "active"),
    ]


async def test_a_correction_holding_a_secret_is_refused_and_changes_nothing(
    make_session: Callable[..., Mem01Session], engine: BeliefEngine
) -> None:
    session = make_session("conv", "erin")
    await say(session, "I live in Oslo")
    assert await session.flush_memory(timeout=30)
    [belief] = await session.memory.beliefs(session.user_id, include_inactive=True)
    key = "sk-proj-Z3tQ8vLm2XcR7bNp4KdW9sYh6FjA1uEo"
    with pytest.raises(InvalidOpError, match=r"content holds a secret \(api key\)") as info:
        await session.memory.correct(session.user_id, belief.id, f"My API key is {key}")
    assert key not in str(info.value)
    history = await engine.history("erin")
    assert [(b.content, b.status) for b in history] == [("Lives in Oslo", "active")]


async def test_extractor_sees_text_only_never_memory_or_tools(
    make_session: Callable[..., Mem01Session],
    engine: BeliefEngine,
    extractor: ScriptedExtractor,
) -> None:
    first = make_session("c1", "dana")
    await say(first, "I live in Paris")
    assert await first.flush_memory(timeout=30)

    @function_tool
    def lookup(q: str) -> str:
        """Look something up."""
        return "SECRET-TOOL-PAYLOAD"

    session = make_session("c2", "dana")
    model = ScriptedModel(
        [[function_call("lookup", {"q": "x"}, call_id="t1")], [assistant_message("Done.")]]
    )
    await Runner.run(
        Agent(name="a", model=model, tools=[lookup]),
        "Check something for me",
        session=session,
        run_config=session.run_config(),
    )
    assert await session.flush_memory(timeout=30)
    assert MEMORY_MARKER in json.dumps(model.calls[0].input)  # the model did see memory
    for turn, _candidates in extractor.calls:
        for message in turn.messages:
            assert message.role in ("user", "assistant")
            assert MEMORY_MARKER not in message.text
            assert "SECRET-TOOL-PAYLOAD" not in message.text
    texts = [m.text for turn, _ in extractor.calls for m in turn.messages]
    assert "Check something for me" in texts and "Done." in texts
    # candidates are shown under aliases, never raw ids
    shown = [c for _, cands in extractor.calls for c in cands]
    assert shown and all(c.alias.startswith("b") for c in shown)


async def test_recall_waits_for_accepted_turns(
    make_session: Callable[..., Mem01Session], engine: BeliefEngine
) -> None:
    session = make_session("c", "erin", recall_wait=30)
    await session.add_items(turn("I live in Lisbon"))
    result = await session.recall("where do I live")
    assert result is not None and not result.stale
    assert "Lives in Lisbon" in result.text


async def test_recall_says_stale_when_the_wait_expires(
    make_session: Callable[..., Mem01Session], engine: BeliefEngine
) -> None:
    gate = Gate()
    started = Gate()

    async def slow(turn, candidates, now):  # type: ignore[no-untyped-def]
        started.set()
        await gate.wait()
        from mem01session.extraction import Extraction

        return Extraction(ops=())

    extractor = ScriptedExtractor()
    extractor.extract = slow  # type: ignore[method-assign]
    session = make_session("c", "fay", extractor=extractor, recall_wait=0.05)
    await session.add_items(turn("I live in Oslo"))
    await started.wait()
    result = await session.recall("where")
    assert result is not None and result.stale
    gate.set()
    assert await session.flush_memory(timeout=30)


async def test_failed_extraction_is_reported_and_retried(
    make_session: Callable[..., Mem01Session], memories: MemoryFactory
) -> None:
    def broken(turn, candidates):  # type: ignore[no-untyped-def]
        raise RuntimeError("model said no")

    from mem01session.queue.worker import WorkerPolicy

    extractor = ScriptedExtractor(rule=broken)
    memory = memories(extractor=extractor, worker_policy=WorkerPolicy(max_attempts=1))
    session = make_session("c", "gus", memory=memory)
    await session.add_items(turn("I live in Rome"))
    assert not await session.flush_memory(timeout=30)  # the accepted turn ended failed
    assert session.last_memory_error is not None and "model said no" in session.last_memory_error
    result = await session.recall("where")
    assert result is not None  # recall works, which says nothing of extraction: still there
    assert session.last_memory_error is not None and "model said no" in session.last_memory_error
    assert await session.flush_memory(timeout=30)  # nothing failed since the last flush
    assert session.last_memory_error is None  # so what went wrong is over

    strict = make_session("c2", "gus", memory=memory, strict=True)
    await strict.add_items(turn("I live in Milan"))
    with pytest.raises(Mem01MemoryError, match="model said no"):
        await strict.flush_memory(timeout=30)


async def test_postgres_down_fail_open_and_strict(memories: MemoryFactory) -> None:
    from mem01session.embeddings import HashingEmbedder

    dead = Database("postgresql://nobody@127.0.0.1:1/none", embedded=False)
    engine = BeliefEngine(dead, HashingEmbedder(64))
    from agents.memory import SQLiteSession

    memory = memories(engine=engine, extractor=ScriptedExtractor())
    session = Mem01Session("c", "hal", inner=SQLiteSession("c"), memory=memory)
    model = await say(session, "I live in Berlin", answer="Nice.")
    assert len(model.calls) == 1
    assert session.last_memory_error is not None
    assert await session.flush_memory(timeout=1) is False  # fail-open: an answer, no raise
    assert [i.get("role") for i in await session.get_items()] == ["user", "assistant"]

    strict = Mem01Session("s", "hal", inner=SQLiteSession("s"), memory=memory, strict=True)
    with pytest.raises(Mem01MemoryError):
        await say(strict, "Hello")
    with pytest.raises(Mem01MemoryError):
        await strict.add_items(turn("I live in Bonn"))
    # transcript first: the turn is kept even though memory failed
    assert any("Bonn" in json.dumps(i) for i in await strict.get_items())


async def test_a_database_that_is_down_is_warned_about_once_for_everything_it_fails(
    memories: MemoryFactory, caplog: pytest.LogCaptureFixture
) -> None:
    from agents.memory import SQLiteSession

    from mem01session.embeddings import HashingEmbedder

    dead = Database("postgresql://nobody@127.0.0.1:1/none", embedded=False)
    memory = memories(engine=BeliefEngine(dead, HashingEmbedder(64)), extractor=ScriptedExtractor())
    session = Mem01Session("c", "hal", inner=SQLiteSession("c"), memory=memory)
    with caplog.at_level(logging.INFO, logger="mem01session"):
        await say(session, "I live in Berlin", answer="Nice.")  # recall, then enqueue, fail
        assert await session.flush_memory(timeout=1) is False
    said = [r for r in caplog.records if "continues without it" in r.getMessage()]
    warned = [r.getMessage() for r in said if r.levelno == logging.WARNING]
    assert len(warned) == 1 and warned[0].startswith("memory recall failed"), warned
    assert any("enqueue failed" in r.getMessage() for r in said)  # still said, quietly


async def test_clear_memory_erases_and_keeps_transcript(
    make_session: Callable[..., Mem01Session], engine: BeliefEngine, db: Database
) -> None:
    session = make_session("c", "ivy")
    await say(session, "I live in Madrid")
    assert await session.flush_memory(timeout=30)
    receipt = await session.memory.erase(session.user_id, reinstate=True)
    assert receipt.deleted["beliefs"] == 1
    assert len(await session.get_items()) == 2
    async with db.sa_engine.connect() as conn:
        for table in ("beliefs", "belief_events", "belief_sources", "memory_jobs"):
            count = (
                await conn.execute(text(f"SELECT count(*) FROM {table} WHERE user_id = 'ivy'"))
            ).scalar_one()
            assert count == 0, table
    await say(session, "I live in Valencia")  # remembered again after clearing
    assert await session.flush_memory(timeout=30)
    assert await active(engine, "ivy") == ["Lives in Valencia"]


def test_ids_are_validated(memory: Memory) -> None:
    from mem01session.errors import ConfigError

    for bad in ("", "   ", "a\x00b", "x" * 201):
        with pytest.raises(ConfigError, match="session_id"):
            Mem01Session(bad, "u", memory=memory)
        with pytest.raises(ConfigError, match="user_id"):
            Mem01Session("s", bad, memory=memory)
    with pytest.raises(ConfigError, match="max_memory_tokens"):
        Mem01Session("s", "u", memory=memory, max_memory_tokens=0)


def test_a_budget_set_later_is_checked_when_set_and_a_bad_one_changes_nothing(
    memory: Memory,
) -> None:
    from mem01session.errors import ConfigError

    session = Mem01Session("s", "u", memory=memory, max_memory_tokens=300)
    session.max_memory_tokens = 500
    for bad in (-1, 0, "x", 2.5, True):
        # It was taken, then failed the next run out of Runner.run, the answer unsaid.
        with pytest.raises(ConfigError, match="max_memory_tokens must be a positive integer"):
            session.max_memory_tokens = bad  # type: ignore[assignment]
    assert session.max_memory_tokens == 500


async def test_a_negative_close_timeout_is_refused_and_closes_nothing(memory: Memory) -> None:
    from mem01session.errors import ConfigError

    session = Mem01Session("s", "u", memory=memory)
    with pytest.raises(ConfigError, match="flush_timeout must be a number of seconds >= 0"):
        await session.aclose(flush_timeout=-3)
    with pytest.raises(ConfigError, match="flush_timeout"):
        await memory.aclose(flush_timeout=float("nan"))
    assert not memory.closed


def test_a_transcript_or_memory_of_the_wrong_kind_is_refused_at_once(memory: Memory) -> None:
    """Not at the first run, as an AttributeError from inside the SDK."""
    from mem01session.errors import ConfigError
    from mem01session.shortterm import SummarizingSession, TrimmingSession

    with pytest.raises(ConfigError, match=r"inner must be an SDK Session .* got str, which has"):
        Mem01Session("s", "u", inner="chat.sqlite", memory=memory)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="memory must be a Memory, got str"):
        Mem01Session("s", "u", memory="postgresql://x")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="inner must be an SDK Session"):
        TrimmingSession(None, max_turns=3)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="inner must be an SDK Session"):
        SummarizingSession(object())  # type: ignore[arg-type]


def test_satisfies_the_sdk_session_protocol(make_session: Callable[..., Mem01Session]) -> None:
    from agents.memory import Session

    session = make_session("proto")
    assert isinstance(session, Session)
    assert session.session_id == "proto"


def test_extractor_is_openai_with_a_key_and_rules_without(tmp_path: object) -> None:
    from agents.memory import SQLiteSession

    from mem01session import Settings
    from mem01session.extraction import OpenAIExtractor, RuleExtractor

    keyed = Settings(openai_api_key="sk-test-not-used-000000", home=tmp_path)  # type: ignore[arg-type]
    with_key = Mem01Session("s", "u", inner=SQLiteSession("s"), memory=Memory(keyed))
    assert isinstance(with_key.memory.extractor, OpenAIExtractor)
    offline = Memory(Settings(home=tmp_path))  # type: ignore[arg-type]
    without = Mem01Session("s", "u", inner=SQLiteSession("s"), memory=offline)
    assert isinstance(without.memory.extractor, RuleExtractor)


async def test_one_job_per_turn_holding_question_and_answer(
    make_session: Callable[..., Mem01Session], db: Database
) -> None:
    session = make_session("c", "jo")
    await say(session, "I live in Porto", answer="Porto is lovely.")
    async with db.sa_engine.connect() as conn:
        payloads = (await conn.execute(text("SELECT payload FROM memory_jobs"))).scalars().all()
    assert len(payloads) == 1
    assert [(m["role"], m["text"]) for m in payloads[0]["messages"]] == [
        ("user", "I live in Porto"),
        ("assistant", "Porto is lovely."),
    ]


async def payloads(db: Database) -> list[list[tuple[str, str]]]:
    async with db.sa_engine.connect() as conn:
        rows = await conn.execute(text("SELECT payload FROM memory_jobs ORDER BY id"))
        return [[(m["role"], m["text"]) for m in p["messages"]] for p in rows.scalars()]


async def test_runs_awaited_at_once_on_one_session_record_each_answer_with_its_question(
    make_session: Callable[..., Mem01Session], db: Database
) -> None:
    """Told apart by their tasks (the SDK stores a run's input and answer from its own
    task), each answer is recorded with its own question, though all three questions were
    held when the first answer came (one job held them all, the other answers alone)."""
    session = make_session("c", "lu")
    said = [f"I have a pet number {n}" for n in range(3)]
    answers = [f"Noted {n}." for n in range(3)]
    await asyncio.gather(*(say(session, q, answer=a) for q, a in zip(said, answers, strict=True)))
    assert await session.flush_memory(timeout=30)
    expected = [[("user", q), ("assistant", a)] for q, a in zip(said, answers, strict=True)]
    assert sorted(await payloads(db)) == sorted(expected)


class _HeldModel(ScriptedModel):
    """A scripted model whose call number ``at`` (from 0) says it started, then waits."""

    def __init__(self, steps: list[Any], at: int) -> None:
        super().__init__(steps)
        self.at, self.made = at, 0
        self.started, self.go = asyncio.Event(), asyncio.Event()

    async def get_response(self, *args: Any, **kwargs: Any) -> Any:
        if self.made == self.at:
            self.started.set()
            await self.go.wait()
        self.made += 1
        return await super().get_response(*args, **kwargs)


async def test_a_second_answer_of_a_run_leaves_the_question_of_another_run_held(
    make_session: Callable[..., Mem01Session], db: Database
) -> None:
    """A run that answers twice (a few words beside its tool call, then the answer) has
    had its question recorded with the first: the second goes alone, and the question
    another run stored meanwhile stays held for that run's own answer."""
    session = make_session("c", "ru")

    @function_tool
    def look() -> str:
        return "found"

    two = _HeldModel(
        [[assistant_message("Let me look."), function_call("look", {}, call_id="c1")],
         [assistant_message("It is in the drawer.")]],
        at=1,
    )  # fmt: skip
    one = _HeldModel([[assistant_message("Noted.")]], at=0)

    async def run(model: ScriptedModel, said: str, tools: list[Any]) -> None:
        agent = Agent(name="a", model=model, tools=tools)
        await Runner.run(agent, said, session=session, run_config=session.run_config())

    first = asyncio.create_task(run(two, "Where are my keys?", [look]))
    await two.started.wait()  # its first answer is stored, its second not yet
    second = asyncio.create_task(run(one, "I have a cat", []))
    await one.started.wait()  # its question is stored, its answer not yet
    two.go.set()
    await first
    one.go.set()
    await second
    assert await session.flush_memory(timeout=30)
    assert await payloads(db) == [
        [("user", "Where are my keys?"), ("assistant", "Let me look.")],
        [("assistant", "It is in the drawer.")],
        [("user", "I have a cat"), ("assistant", "Noted.")],
    ]


async def test_an_answer_added_by_a_task_that_asked_nothing_takes_the_held_question(
    make_session: Callable[..., Mem01Session], db: Database
) -> None:
    """Items added by hand: the question from this task (still running), the answer from
    another that stored no question: they are one turn."""
    session = make_session("c", "hand")
    await session.add_items([{"role": "user", "content": "I live in Porto"}])
    await asyncio.create_task(session.add_items([{"role": "assistant", "content": "Noted."}]))
    assert await session.flush_memory(timeout=30)
    assert await payloads(db) == [[("user", "I live in Porto"), ("assistant", "Noted.")]]


async def test_input_whose_run_failed_goes_with_the_next_answer(
    make_session: Callable[..., Mem01Session], db: Database
) -> None:
    """A run that failed after storing its input never answers it: the next answer, from
    another task, takes it (nothing is left held); a run still under way keeps its own."""
    session = make_session("c", "mo")

    async def fails() -> None:
        failing = ScriptedModel([])  # no answer scripted: the model call raises
        with pytest.raises(Exception):  # noqa: B017 - whatever the SDK raises for it
            await Runner.run(
                Agent(name="a", model=failing),
                "I live in Braga",
                session=session,
                run_config=session.run_config(),
            )

    await asyncio.create_task(fails())
    await asyncio.create_task(say(session, "I have a dog", answer="Nice."))
    assert await session.flush_memory(timeout=30)
    assert await payloads(db) == [
        [("user", "I live in Braga"), ("user", "I have a dog"), ("assistant", "Nice.")]
    ]
    assert session_health(session).unsent_turns == 0


async def test_the_answer_never_waits_for_its_own_turns_extraction(
    make_session: Callable[..., Mem01Session],
) -> None:

    async def never(turn, candidates, now):  # type: ignore[no-untyped-def]
        await asyncio.Event().wait()

    extractor = ScriptedExtractor()
    extractor.extract = never  # type: ignore[method-assign]
    session = make_session("c", "kai", extractor=extractor, recall_wait=3600)
    async with asyncio.timeout(60):  # a deadlock guard, not a timing assertion
        model = await say(session, "I live in Faro", answer="Noted.")
    assert len(model.calls) == 1
    assert session.last_recall is not None and not session.last_recall.stale
    await session.memory.aclose(flush_timeout=0)  # its extraction never ends: no wait for it


async def test_strict_close_raises_only_after_closing_what_it_owns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agents.memory import SQLiteSession

    from mem01session.config import Settings

    closed: list[str] = []
    real_close = SQLiteSession.close

    def recording_close(self: SQLiteSession) -> None:
        closed.append(self.session_id)
        real_close(self)

    monkeypatch.setattr(SQLiteSession, "close", recording_close)
    settings = Settings(database_url="postgresql://nobody@127.0.0.1:1/none", home=tmp_path)
    monkeypatch.setattr(Settings, "from_env", classmethod(lambda cls, environ=None: settings))
    session = Mem01Session("c", "ida", strict=True)  # a private memory, from the environment
    await session.add_items([turn("I live in Oslo")[0]])  # input held: a turn to flush at close

    with pytest.raises(Mem01MemoryError, match="flush failed"):
        await session.aclose()
    assert closed == ["c"]  # the transcript store it created is closed all the same
    assert (
        session_health(session).unsent_turns == 0
    )  # strict: the caller was told, nothing is kept behind it


async def test_a_recall_failure_is_not_wiped_by_the_same_runs_enqueue(
    make_session: Callable[..., Mem01Session], memories: MemoryFactory, db: Database
) -> None:
    from mem01session.embeddings import HashingEmbedder
    from mem01session.errors import EmbeddingError

    class DownEmbedder(HashingEmbedder):
        """The embedding server, unreachable (the network boundary)."""

        async def embed(self, texts: Any) -> list[list[float]]:
            raise EmbeddingError("embedding server unreachable")

    memory = memories(engine=BeliefEngine(db, DownEmbedder(64)))
    session = make_session("c", "lee", memory=memory)
    model = await say(session, "Hello there", answer="Hi.")
    assert len(model.calls) == 1  # answered without memory
    assert session.last_memory_error is not None
    assert "embedding server unreachable" in session.last_memory_error  # still says why


async def test_a_flush_that_times_out_says_so(
    make_session: Callable[..., Mem01Session], extractor: ScriptedExtractor
) -> None:
    gate = Gate()  # the extractor runs on the memory's own loop

    class Held(ScriptedExtractor):
        async def extract(self, turn: Any, candidates: Any, now: Any) -> Any:
            await gate.wait()
            return await super().extract(turn, candidates, now)

    session = make_session("held", "hank", extractor=Held())
    await say(session, "I live in Oslo")
    # A second, so that the read after the wait has its tenth of it on a busy machine too
    # (at 0.2 s that was 20 ms: a read cut short says "gave up ... while reading" instead).
    assert await session.flush_memory(timeout=1.0) is False
    assert session.last_memory_error is not None
    assert "timed out after 1 s" in session.last_memory_error
    gate.set()
    assert await session.flush_memory(timeout=30)
    assert session.last_memory_error is None


async def test_many_runs_at_once_on_one_session_lose_no_turn(
    make_session: Callable[..., Mem01Session], db: Database
) -> None:
    """Runs awaited at once each enqueue from their own task, while the others' turns are
    on their way too: every turn is stored once (a sender that took a turn another had
    stored already once removed the next turn from the queue unsent)."""
    session = make_session("c", "many")
    said = [f"Turn number {n}" for n in range(40)]
    await asyncio.gather(*(say(session, q, answer=f"Noted {q}.") for q in said))
    assert await session.flush_memory(timeout=30)
    stored = [m for p in await payloads(db) for role, m in p if role == "user"]
    assert sorted(stored) == sorted(said)
