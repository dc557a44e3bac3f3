"""Short-term strategies under Mem01Session: trimmed transcript, durable recall (PostgreSQL)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from agents import SQLiteSession

from mem01session import Memory
from mem01session.db import Database
from mem01session.embeddings import HashingEmbedder
from mem01session.engine import BeliefEngine
from mem01session.errors import ConfigError
from mem01session.session import Mem01Session, session_health
from mem01session.session.items import item_text
from mem01session.shortterm import SessionManager, TrimmingSession, mem01_session_factory
from tests.pg import locked
from tests.session.conftest import ScriptedExtractor
from tests.shortterm.helpers import turn, user_texts
from tests.shortterm.test_manager import Clock


@pytest.fixture
async def memory(db: Database, embedder: HashingEmbedder) -> AsyncIterator[Memory]:
    async with Memory(engine=BeliefEngine(db, embedder), extractor=ScriptedExtractor()) as mem:
        yield mem


async def test_mem01_over_trimming_recalls_while_the_transcript_stays_trimmed(
    memory: Memory, tmp_path: Path
) -> None:
    inner = TrimmingSession(SQLiteSession("conv", tmp_path / "t.sqlite"), max_turns=3)
    session = Mem01Session("conv", "ada", inner=inner, memory=memory)
    await turn(session, "I live in Lisbon")
    assert await session.flush_memory(timeout=30)
    for n in range(4):
        await turn(session, f"small talk {n}")
    model = await turn(session, "Where do I live?")

    seen = list(model.calls[0].input)
    assert "I live in Lisbon" not in user_texts(seen)  # trimmed out of the transcript…
    assert "Lives in Lisbon" in json.dumps(seen)  # …yet recalled from durable memory
    assert user_texts(await session.get_items())[-3:] == [
        "small talk 2",
        "small talk 3",
        "Where do I live?",
    ]
    assert len(user_texts(await session.get_items())) == 3


async def test_expired_chat_starts_empty_but_still_recalls(memory: Memory, tmp_path: Path) -> None:
    clock = Clock()
    manager = SessionManager(
        tmp_path,
        session_ttl_seconds=600,
        clock=clock,
        session_factory=mem01_session_factory(memory),
    )
    first = manager.get_or_create("telegram", "42", "chat")
    assert isinstance(first.session, Mem01Session)
    assert first.session.user_id == "telegram:42"
    await turn(first, "I moved to Porto")
    assert await first.session.flush_memory(timeout=30)

    clock.advance(601)
    fresh = manager.get_or_create("telegram", "42", "chat")
    assert fresh.session_id != first.session_id
    model = await turn(fresh, "Where do I live?")
    seen = list(model.calls[0].input)
    # Fresh: the question alone (the block rides in front of its words).
    assert [(i.get("role"), item_text(i)) for i in seen] == [("user", "Where do I live?")]
    assert "Lives in Porto" in json.dumps(seen)  # durable memory of telegram:42
    other = manager.get_or_create("telegram", "43", "chat")
    assert "Porto" not in json.dumps((await turn(other, "Where do I live?")).calls[0].input)
    manager.close()


async def test_a_chat_its_session_refuses_leaves_no_row(memory: Memory, tmp_path: Path) -> None:
    # The row was written first: a fresh manager then counted chats that did not exist.
    with SessionManager(tmp_path, session_factory=mem01_session_factory(memory)) as manager:
        for user in ("a\x00b", "u" * 300):  # taken by the registry, not by a Mem01Session
            with pytest.raises(ConfigError, match="user_id"):
                manager.get_or_create("tg", user, "c")
        assert manager.active_session_count == 0
    with SessionManager(tmp_path, session_factory=mem01_session_factory(memory)) as again:
        assert again.active_session_count == 0


async def test_a_managed_chat_answers_as_its_mem01_session(memory: Memory, tmp_path: Path) -> None:
    """The README's managed chat, completed: every Mem01Session method on the chat."""
    with SessionManager(tmp_path, session_factory=mem01_session_factory(memory)) as manager:
        s = manager.get_or_create("telegram", "42", "chat-7")
        await turn(s, "I moved to Lisbon", context=s)
        s.set_state("language", "pt")

        assert s.user_id == "telegram:42" and s.session_id == s.session.session_id
        assert await s.flush_memory(timeout=30) is True
        assert s.last_memory_error is None
        assert s.last_recall is not None  # the run's recall, read through the chat
        [belief] = await s.memory.beliefs(s.user_id, include_inactive=True)
        assert belief.content == "Lives in Lisbon"
        assert "Lives in Lisbon" in (await s.recall("where do I live?")).text
        corrected = await s.memory.correct(s.user_id, belief.id, "Lives in Porto")
        await s.memory.forget(s.user_id, corrected.changes[0].belief_id, reason="test")
        assert [b.status for b in await s.memory.beliefs(s.user_id, include_inactive=True)] == [
            "superseded",
            "invalidated",
        ]
        assert (await s.memory.erase(s.user_id, reinstate=True)).total > 0
        assert {"flush_memory", "recall", "set_state"} <= set(dir(s))
        assert s.get_state("language") == "pt"
        s.timezone = "Asia/Tokyo"  # set on the chat's Mem01Session, not shadowed by the chat
        assert s.session.timezone == "Asia/Tokyo" and "timezone" not in vars(s)
        s.anything_else = 1  # the chat's own attributes are still its own
        assert vars(s)["anything_else"] == 1 and not hasattr(s.session, "anything_else")


async def test_a_chat_without_durable_memory_says_how_to_get_it(tmp_path: Path) -> None:
    with SessionManager(tmp_path) as manager:  # the plain factory: a transcript only
        s = manager.get_or_create("telegram", "42", "chat-7")
        with pytest.raises(AttributeError, match="mem01_session_factory") as raised:
            await s.flush_memory()
        assert "nor has the SQLiteSession it manages" in str(raised.value)
        with pytest.raises(AttributeError, match="'_private'"):
            _ = s._private


async def test_a_chat_let_go_of_enqueues_the_turns_it_still_held(
    memory: Memory, db_url: str, tmp_path: Path
) -> None:
    """A turn that could not be enqueued (its table locked) waits with its session; removing
    or expiring the chat closes that session in the background instead of dropping it."""
    clock = Clock()
    factory = mem01_session_factory(memory, recall_wait=0.3)
    manager = SessionManager(
        tmp_path, session_ttl_seconds=600, clock=clock, session_factory=factory
    )
    removed = manager.get_or_create("telegram", "42", "chat-1")
    expired = manager.get_or_create("telegram", "42", "chat-2")
    kept = manager.get_or_create("telegram", "42", "chat-3")
    with locked(db_url, "memory_jobs"):
        await turn(removed, "I live in Oslo")
        await turn(expired, "I moved to Porto")
        await turn(kept, "I moved to Lisbon")
    assert [session_health(s).unsent_turns for s in (removed, expired, kept)] == [1, 1, 1]

    assert manager.remove("telegram", "42", "chat-1")
    clock.advance(601)
    kept.touch()
    assert manager.cleanup_expired() == 1  # chat-2
    await manager.aclose()  # waits for those closes, and closes chat-3's session

    assert [session_health(s).dropped_turns for s in (removed, expired, kept)] == [0, 0, 0]
    reader = Mem01Session("reader", "telegram:42", memory=memory)
    assert await reader.flush_memory(timeout=30)
    said = {b.content for b in await reader.memory.beliefs(reader.user_id, include_inactive=True)}
    assert {"Lives in Oslo", "Lives in Porto", "Lives in Lisbon"} <= said
    await reader.aclose()


async def test_closing_the_manager_without_await_leaves_the_turns_to_the_memory(
    memory: Memory, db: Database, embedder: HashingEmbedder, db_url: str, tmp_path: Path
) -> None:
    factory = mem01_session_factory(memory, recall_wait=0.3)
    manager = SessionManager(tmp_path, session_factory=factory)
    chat = manager.get_or_create("telegram", "42", "chat-1")
    with locked(db_url, "memory_jobs"):
        await turn(chat, "I live in Oslo")
    assert session_health(chat).unsent_turns == 1
    manager.close()  # the transcripts only
    del chat
    await memory.aclose()  # the session still held its turn: sent and applied now
    history = await BeliefEngine(db, embedder).history("telegram:42")
    assert [b.content for b in history] == ["Lives in Oslo"]


@pytest.mark.parametrize("wrap", ["trimming", "summarizing"])
def test_a_wrapper_over_a_session_whose_id_comes_later_is_made_and_follows_it(wrap: str) -> None:
    """OpenAI's conversation session makes its id on first use and raises when asked for
    it before: a wrapper over it is made all the same, and its id is the inner's."""
    from agents.memory import OpenAIConversationsSession
    from openai import AsyncOpenAI

    from mem01session.shortterm import SummarizingSession
    from mem01session.shortterm.summarizers import OfflineSummarizer

    client = AsyncOpenAI(api_key="not-a-real-key", base_url="http://127.0.0.1:9/v1")
    inner = OpenAIConversationsSession(openai_client=client)
    with pytest.raises(ValueError):
        _ = inner.session_id
    outer = (
        TrimmingSession(inner, max_turns=3)
        if wrap == "trimming"
        else SummarizingSession(inner, summarizer=OfflineSummarizer())
    )
    assert "session_id=None" in repr(outer)
    inner.session_id = "conv_123"  # what its first use does
    assert outer.session_id == "conv_123"
    assert "conv_123" in repr(outer)


async def test_a_wrapper_or_a_mem01_session_over_a_mem01_session_is_refused(
    memory: Memory, tmp_path: Path
) -> None:
    """Over a Mem01Session, a compaction re-adds the kept turns and a summary is added as a
    user turn: both were recorded again as things the user said. Refused by name, with the
    composition that works (the wrapper inside, around the transcript). A Mem01Session
    over another would record every turn twice."""
    from mem01session.shortterm import SummarizingSession

    session = Mem01Session("conv", "ada", inner=SQLiteSession("conv", tmp_path / "t.sqlite"),
                           memory=memory)  # fmt: skip
    manager = SessionManager(tmp_path / "chats", session_factory=mem01_session_factory(memory))
    chat = manager.get_or_create("web", "ada", "c1")
    for inner in (session, chat):
        with pytest.raises(ConfigError, match=r"inner=TrimmingSession\(SQLiteSession"):
            TrimmingSession(inner, max_turns=3)
        with pytest.raises(ConfigError, match=r"inner=SummarizingSession\(SQLiteSession"):
            SummarizingSession(inner, keep_last_n_turns=2, context_limit=4)
        # Memory over memory: every turn would be recorded twice.
        with pytest.raises(ConfigError, match="inner is a Mem01Session already"):
            Mem01Session("conv", "ada", inner=inner, memory=memory)
    await manager.aclose()
    await session.aclose()


def test_a_factory_option_mem01_session_does_not_take_is_refused_when_the_factory_is_made(
    memory: Memory,
) -> None:
    """It failed at the first chat (in production, a user's first message): an option
    Mem01Session does not take, one the manager gives each chat itself, a bad value of one
    it takes, a memory that is not a Memory."""

    for memory_, options, message in [
        (memory, {"bogus": 1}, "got an unexpected keyword argument 'bogus'"),
        (memory, {"inner": None}, "inner: the manager gives each chat its own"),
        (memory, {"user_id": "x"}, "user_id: the manager gives each chat its own"),
        (memory, {"max_memory_tokens": 0}, "max_memory_tokens must be"),
        (memory, {"strict": "yes"}, "strict must be"),
        (memory, {"recall_wait": -1}, "recall_wait must be a number of seconds"),
        (memory, {"provenance": "full"}, "provenance"),
        (memory, {"memory_placement": "footer"}, "memory_placement must be one of"),
        ("postgresql://x", {}, "memory must be a Memory, got str"),
    ]:
        with pytest.raises(ConfigError, match=message):
            mem01_session_factory(memory_, **options)  # type: ignore[arg-type]
    mem01_session_factory(memory, max_memory_tokens=400, strict=True)  # what it takes
