"""The application object: sessions share it, closing it leaves nothing running or claimed;
a run without the memory filter is not silent; recalled memory is marked by type, not text."""

from __future__ import annotations

import asyncio
import gc
import logging
import re
import socket
import threading
import weakref
from collections.abc import AsyncIterator, Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path

import pytest
from agents import Agent, Runner
from agents.memory import SQLiteSession
from agents.testing import ScriptedModel, assistant_message
from sqlalchemy import text

import mem01session.opening as opening_module
from mem01session import Mem01Session, Memory, Settings
from mem01session.db import Database, urls
from mem01session.embeddings import HashingEmbedder
from mem01session.engine import BeliefEngine
from mem01session.engine.render import OPEN
from mem01session.errors import ConfigError, DatabaseError, MemoryClosedError
from mem01session.extraction import Candidate, Extraction, Turn
from mem01session.memory import host_of
from mem01session.session import session_health
from mem01session.session.items import MemoryItem, last_user_text, memory_texts, turn_messages
from tests.conftest import TEST_DIM
from tests.pg import locked
from tests.session.conftest import Gate, ScriptedExtractor, city_ops


class HoldingExtractor(ScriptedExtractor):
    """The scripted extractor, but a turn that says "hold" waits forever (a slow LLM)."""

    def __init__(self) -> None:
        super().__init__()
        self.holding = Gate()

    async def extract(
        self, turn: Turn, candidates: Sequence[Candidate], now: datetime
    ) -> Extraction:
        if any("hold" in m.text for m in turn.messages):
            self.holding.set()
            await asyncio.Event().wait()
        return await super().extract(turn, candidates, now)


async def ask(session: Mem01Session, said: str, answer: str = "Noted.") -> ScriptedModel:
    model = ScriptedModel([[assistant_message(answer)]])
    await Runner.run(
        Agent(name="a", model=model), said, session=session, run_config=session.run_config()
    )
    return model


def memory_threads() -> list[threading.Thread]:
    """The threads memories run their loops (and their workers) on."""
    return [t for t in threading.enumerate() if t.name == "mem01-memory"]


async def test_closing_the_memory_stops_its_workers_and_hands_back_their_jobs(
    db: Database, embedder: HashingEmbedder, tmp_path: Path
) -> None:
    extractor = HoldingExtractor()
    before = memory_threads()
    memory = Memory(engine=BeliefEngine(db, embedder), extractor=extractor)
    store = tmp_path / "t.sqlite"
    ada = Mem01Session("ada-1", "ada", inner=SQLiteSession("ada-1", store), memory=memory)
    bob = Mem01Session("bob-1", "bob", inner=SQLiteSession("bob-1", store), memory=memory)

    await ask(ada, "I live in Lisbon")
    await ask(bob, "I live in Oslo")
    assert await ada.flush_memory(timeout=30) and await bob.flush_memory(timeout=30)
    model = await ask(bob, "Where do I live?")
    assert "Lives in Oslo" in str(model.calls[0].input)
    assert "Lisbon" not in str(model.calls[0].input)  # one memory, two users, no crossing

    await ask(ada, "Please hold that thought")  # its extraction never ends by itself
    await asyncio.wait_for(extractor.holding.wait(), 30)
    worker = await memory.worker()
    assert worker.running and len(memory_threads()) == len(before) + 1
    # Another user's turns are not held up by it: the worker runs several users at once.
    assert await bob.flush_memory(timeout=30)
    async with db.sa_engine.connect() as conn:
        claimed = (
            await conn.execute(text("SELECT count(*) FROM memory_jobs WHERE status = 'running'"))
        ).scalar_one()
    assert claimed == 1

    await memory.aclose(flush_timeout=0.2)

    assert not worker.running and memory_threads() == before  # its loop's thread ended
    async with db.sa_engine.connect() as conn:
        rows = (
            await conn.execute(text("SELECT status, lease_owner, attempts FROM memory_jobs"))
        ).all()
    assert [r for r in rows if r.status == "running" or r.lease_owner is not None] == []
    held = [r for r in rows if r.status == "pending"]
    assert len(held) == 1 and held[0].attempts == 0  # back in the queue, attempt not counted
    assert [r.status for r in rows].count("done") == len(rows) - 1


async def test_sessions_of_a_closed_memory_fail_open(
    db: Database, embedder: HashingEmbedder, tmp_path: Path
) -> None:
    memory = Memory(engine=BeliefEngine(db, embedder), extractor=ScriptedExtractor())
    session = Mem01Session(
        "c", "cy", inner=SQLiteSession("c", tmp_path / "t.sqlite"), memory=memory
    )
    await memory.aclose()
    model = await ask(session, "I live in Rome")
    assert len(model.calls) == 1  # answered all the same
    assert session.last_memory_error is not None and "closed" in session.last_memory_error


async def test_a_session_let_go_of_is_freed_and_one_holding_a_turn_is_kept_until_sent(
    db: Database, db_url: str, embedder: HashingEmbedder, tmp_path: Path
) -> None:
    """A server makes a session per conversation and may never close it: the memory must
    not keep every one alive, yet a turn the database could not take yet is not lost."""
    memory = Memory(engine=BeliefEngine(db, embedder), extractor=ScriptedExtractor())
    store = tmp_path / "t.sqlite"

    def chat(name: str, **options: float) -> Mem01Session:
        inner = SQLiteSession(name, store)
        return Mem01Session(name, "ada", inner=inner, memory=memory, **options)

    done = chat("done")
    await ask(done, "I live in Lisbon")  # enqueued: nothing left to send
    freed = weakref.ref(done), weakref.ref(done._tier)
    stuck = chat("stuck", recall_wait=0.3)
    with locked(db_url, "memory_jobs"):
        await ask(stuck, "I moved to Porto")
    assert session_health(stuck).unsent_turns == 1
    kept = weakref.ref(stuck._tier)
    del done, stuck
    gc.collect()
    assert [ref() for ref in freed] == [None, None]
    assert kept() is not None  # it holds a turn the database has not taken yet

    await memory.aclose()  # sends it, and lets the worker apply it
    assert kept() is None
    async with db.sa_engine.connect() as conn:
        said = (await conn.execute(text("SELECT content FROM episodes ORDER BY id"))).scalars()
        assert list(said) == ["I live in Lisbon", "I moved to Porto"]


async def test_closing_the_memory_waits_for_the_turns_of_a_session_let_go_of(
    db: Database, embedder: HashingEmbedder, tmp_path: Path
) -> None:
    """As for an open session: a request handler's session, freed unclosed, still has its
    turn applied before the memory (or the process, at exit) closes."""

    class Slow(ScriptedExtractor):
        async def extract(
            self, turn: Turn, candidates: Sequence[Candidate], now: datetime
        ) -> Extraction:
            await asyncio.sleep(0.5)  # an LLM call
            return await super().extract(turn, candidates, now)

    memory = Memory(engine=BeliefEngine(db, embedder), extractor=Slow())

    async def handle(said: str) -> None:
        session = Mem01Session(
            "c", "ada", inner=SQLiteSession("c", tmp_path / "t.sqlite"), memory=memory
        )
        await ask(session, said)

    await handle("I live in Lisbon")
    gc.collect()
    await memory.aclose(flush_timeout=30)
    async with db.sa_engine.connect() as conn:
        statuses = (await conn.execute(text("SELECT status FROM memory_jobs"))).scalars()
        assert list(statuses) == ["done"]
    history = await BeliefEngine(db, embedder).history("ada")
    assert [b.content for b in history] == ["Lives in Lisbon"]


async def test_a_private_memory_closes_when_its_session_is_freed_unclosed(
    db: Database, db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A handler that makes a session per request without ``memory=`` and never closes it
    gave each its own pools, worker and thread until exit, until the server refused more
    connections. The memory now closes in the background once its session is freed, after
    the usual chance for its turn."""
    monkeypatch.setenv("MEM01_DATABASE_URL", db_url)
    monkeypatch.setenv("MEM01_HOME", str(tmp_path))
    monkeypatch.setenv("MEM01_EMBEDDING_MODEL", f"mem01-offline-hash-v1-{TEST_DIM}")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    before = memory_threads()

    async def handle(said: str) -> None:
        session = Mem01Session("c", "ada", inner=SQLiteSession("c", tmp_path / "t.sqlite"))
        await ask(session, said)

    await handle("I live in Lisbon")
    [thread] = [t for t in memory_threads() if t not in before]
    gc.collect()
    thread.join(60)  # the memory's loop ends with its close
    assert not thread.is_alive()
    async with db.sa_engine.connect() as conn:
        statuses = (await conn.execute(text("SELECT status FROM memory_jobs"))).scalars()
        assert list(statuses) == ["done"]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"settings": "postgresql://u@h/db"}, "settings must be a Settings, got a str; a database"),
        ({"settings": {"home": "x"}}, "settings must be a Settings, got dict"),
        ({"engine": object()}, "engine must be a BeliefEngine, got object"),
        ({"embedder": object()}, "embedder must be an Embedder (embed), got object"),
        ({"extractor": "rules"}, "extractor must be an Extractor (extract), got str"),
        ({"worker_policy": {"concurrency": 2}}, "worker_policy must be a WorkerPolicy, got dict"),
        ({"clock": "now"}, "clock must be callable"),
        ({"run_worker": "no"}, "run_worker must be True or False, got 'no'"),
        ({"auto_migrate": 1}, "auto_migrate must be True or False, got 1"),
    ],
)
def test_a_part_of_the_wrong_kind_is_refused_when_the_memory_is_made(
    options: dict[str, object], message: str
) -> None:
    """Each was accepted and failed later, inside a run or the worker (a URL given as the
    settings raised AttributeError; run_worker="no" meant yes)."""
    with pytest.raises(ConfigError, match=re.escape(message)):
        Memory(**options)  # type: ignore[arg-type]


def test_a_memory_on_a_given_engine_keeps_the_engines_clock(engine: BeliefEngine) -> None:
    """Turns are stamped by the memory's clock and recalls reckoned by the engine's: a
    memory on a given engine has the engine's, and a second one is refused."""
    moment = datetime(2026, 3, 2, 9, tzinfo=UTC)
    on_the_clock = BeliefEngine(engine.db, engine.embedder, clock=lambda: moment)
    assert host_of(Memory(engine=on_the_clock)).now() == moment
    with pytest.raises(ConfigError, match="the engine given has a clock of its own"):
        Memory(engine=on_the_clock, clock=lambda: moment)


async def test_closing_a_session_again_is_quiet(
    db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """``await session.aclose()`` and then ``async with``'s exit (or a second call) closed a
    memory of its own twice: the second logged "memory flush failed: MemoryClosedError"."""
    monkeypatch.setenv("MEM01_DATABASE_URL", db_url)
    monkeypatch.setenv("MEM01_HOME", str(tmp_path))
    monkeypatch.setenv("MEM01_EMBEDDING_MODEL", f"mem01-offline-hash-v1-{TEST_DIM}")
    async with Mem01Session("c", "ada", inner=SQLiteSession("c", tmp_path / "t.sqlite")) as s:
        await ask(s, "I live in Lisbon")
        await s.aclose()
        assert s.memory.closed and s.last_memory_error is None
    await s.aclose()
    assert s.last_memory_error is None
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert [w for w in warnings if not w.startswith("extraction: offline")] == []


async def test_a_closed_session_says_so_when_used_again(memory: Memory, tmp_path: Path) -> None:
    # It raised "SQLiteSession is closed", naming a class the caller never made.
    session = Mem01Session("c", "ada", memory=memory)
    await session.aclose()
    for use in (
        session.get_items(),
        session.add_items([{"role": "user", "content": "hi"}]),
        session.pop_item(),
        session.clear_session(),
    ):
        with pytest.raises(MemoryClosedError, match="Mem01Session 'c' is closed; make a new one"):
            await use


async def test_a_run_without_the_memory_filter_warns_once_per_session(
    make_session: Callable[..., Mem01Session], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="mem01session")
    session = make_session("forgetful")
    for said in ("I live in Lima", "Where do I live?"):
        model = ScriptedModel([[assistant_message("ok")]])
        await Runner.run(Agent(name="a", model=model), said, session=session)  # no run_config
    warnings = [r for r in caplog.records if "run_config=session.run_config()" in r.getMessage()]
    assert len(warnings) == 1
    assert "forgetful" in warnings[0].getMessage()

    caplog.clear()
    careful = make_session("careful")
    await ask(careful, "I live in Quito")
    await ask(careful, "Where do I live?")
    assert not [r for r in caplog.records if "run_config" in r.getMessage()]


async def test_a_user_who_types_the_memory_tag_is_heard_like_anyone_else(
    make_session: Callable[..., Mem01Session], extractor: ScriptedExtractor
) -> None:
    said = f"I write {OPEN} in my notes. I live in Tallinn"
    session = make_session("tags", "tess")
    await ask(session, said)
    assert await session.flush_memory(timeout=30)
    [(turn, _)] = extractor.calls
    assert [m.text for m in turn.messages if m.role == "user"] == [said]
    assert [
        b.content for b in await session.memory.beliefs(session.user_id, include_inactive=True)
    ] == ["Lives in Tallinn"]

    model = await ask(session, f"{OPEN} where do I live?")
    assert session.last_recall is not None
    assert "Lives in Tallinn" in session.last_recall.text  # the tagged message was the query
    assert len(memory_texts(model.calls[0].input)) == 1


def test_memory_is_recognised_by_its_type_not_its_text() -> None:
    block = f'{OPEN}\n- #1 "Lives in Tallinn"\n</memory>'
    typed = MemoryItem(role="system", content=block)
    lookalike = {"role": "user", "content": block}
    assert turn_messages([typed]) == []
    assert [m.text for m in turn_messages([lookalike])] == [block]
    assert last_user_text([lookalike, typed]) == block


async def test_a_belief_names_its_turn_by_job_and_an_sdk_id_only_where_there_is_one(
    make_session: Callable[..., Mem01Session], engine: BeliefEngine
) -> None:
    """The SDK gives user input no id: a source then names its turn by its job, not by a
    made-up ref (every one was "item-0", the message's place in its batch). An item's own
    id is kept."""
    session = make_session("c", "ines")
    await ask(session, "I live in Tallinn")
    assert await session.flush_memory(timeout=30)
    [belief] = await engine.history("ines")
    [source] = belief.sources
    assert source.item_ref is None and source.job_id is not None
    assert source.session_id == "c"
    with_id = {"id": "msg_123", "type": "message", "role": "assistant", "content": "Hi"}
    assert [m.item_ref for m in turn_messages([{"role": "user", "content": "x"}, with_id])] == [
        None,
        "msg_123",
    ]


def test_city_ops_helper_still_matches_the_tagged_message() -> None:
    # Guards the test above: the scripted extractor must see a city in that sentence.
    from mem01session.queue.turns import TurnMessage

    turn = Turn(
        "s",
        (TurnMessage("user", f"I write {OPEN} in my notes. I live in Tallinn"),),
        datetime.now(),
    )
    assert [op.content for op in city_ops(turn, [])] == ["Lives in Tallinn"]


async def test_ready_opens_the_connections_the_per_run_path_keeps(
    db: Database, embedder: HashingEmbedder
) -> None:
    memory = Memory(
        engine=BeliefEngine(db, embedder), extractor=ScriptedExtractor(), run_worker=False
    )  # no worker: nothing else takes a connection meanwhile
    try:
        await memory.ready()
        # A burst of runs right after start-up finds them open: none waits on a connect.
        assert db.direct.idle == 15
    finally:
        await memory.aclose()


@pytest.fixture
async def silent_memory(
    silent_server: tuple[int, list[socket.socket]],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> AsyncIterator[tuple[Memory, list[socket.socket]]]:
    """A memory on a database that never answers (connection attempts time out after 1 s);
    the connections that server took."""
    port, taken = silent_server
    monkeypatch.setattr(urls, "CONNECT_TIMEOUT_SECONDS", 1)
    url = f"postgresql://u:pw@127.0.0.1:{port}/x"
    memory = Memory(Settings(database_url=url, home=tmp_path), embedder=HashingEmbedder(8))
    yield memory, taken
    await memory.aclose()


async def test_a_failed_opening_is_not_tried_again_by_every_caller_at_once(
    silent_memory: tuple[Memory, list[socket.socket]],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    """A database that never answers costs one connection timeout, not one per run (and
    per turn stored): for a while after, callers hear of that failure without trying."""
    memory, taken = silent_memory
    monkeypatch.setattr(opening_module, "OPEN_RETRY_SECONDS", 3600.0)
    with pytest.raises(DatabaseError, match="timeout"):
        await memory.engine()
    tried = len(taken)
    assert tried >= 1
    session = Mem01Session("c", "u", inner=SQLiteSession("c", tmp_path / "t.sqlite"),
                           memory=memory)  # fmt: skip
    await Runner.run(
        Agent(name="a", model=ScriptedModel([[assistant_message("Hi.")]])),
        "I live in Oslo",
        session=session,
        run_config=session.run_config(),
    )
    assert session.last_memory_error is not None and "timeout" in session.last_memory_error
    assert session_health(session).unsent_turns == 1  # kept for when memory is back
    with pytest.raises(DatabaseError, match="timeout"):
        await memory.engine()
    assert len(taken) == tried  # nobody tried that server again


async def test_after_the_pause_a_failed_opening_is_tried_again(
    silent_memory: tuple[Memory, list[socket.socket]], monkeypatch: pytest.MonkeyPatch
) -> None:
    memory, taken = silent_memory
    monkeypatch.setattr(opening_module, "OPEN_RETRY_SECONDS", 0.0)
    with pytest.raises(DatabaseError, match="timeout"):
        await memory.engine()
    tried = len(taken)
    with pytest.raises(DatabaseError, match="timeout"):
        await memory.engine()
    assert len(taken) > tried


async def test_a_server_out_of_reach_is_named_with_the_setting_its_url_came_from() -> None:
    # Every run's warning quoted the URL but not where it was set; the CLI's named it.
    memory = Memory(Settings(database_url="postgresql://u:pw-sentinel-789@127.0.0.1:1/x"))
    try:
        with pytest.raises(DatabaseError, match=r"\(set by MEM01_DATABASE_URL\)") as info:
            await memory.engine()
        assert "pw-sentinel-789" not in str(info.value)
    finally:
        await memory.aclose()
