"""What the user said reaches later conversations through the real Runner, with its date,
even when no extractor made a belief of it."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from agents import Agent, Runner
from agents.testing import ScriptedModel, assistant_message

from mem01session import Mem01Session
from mem01session.engine import BeliefEngine, RecallRequest
from mem01session.extraction import RuleExtractor
from tests.session.conftest import MemoryFactory

MONDAY = datetime(2026, 11, 23, 10, 0, tzinfo=UTC)


class Clock:
    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


async def say(session: Mem01Session, words: str, reply: str = "I see.") -> ScriptedModel:
    model = ScriptedModel([[assistant_message(reply)]])
    agent = Agent(name="a", model=model)
    await Runner.run(agent, words, session=session, run_config=session.run_config())
    return model


async def test_monday_words_reach_friday_with_their_date(
    memories: MemoryFactory,
    make_session: Callable[..., Mem01Session],
    engine: BeliefEngine,
) -> None:
    clock = Clock(MONDAY)
    memory = memories(extractor=RuleExtractor(), clock=clock)
    monday = make_session("monday", "alice", memory=memory)
    await say(monday, "I lost my job as a banker yesterday.")
    assert await monday.flush_memory(timeout=30)
    assert await engine.history("alice") == []  # no rule made a belief of it

    clock.now = MONDAY + timedelta(days=4)
    friday = make_session("friday", "alice", memory=memory)
    model = await say(friday, "When did I lose my job?")
    sent = json.dumps(model.calls[0].input)
    assert "I lost my job as a banker yesterday." in sent
    assert "23 Nov 2026" in sent
    # The transcript holds Friday only: the quote was injected, not stored.
    items = await friday.get_items()
    assert [i.get("role") for i in items] == ["user", "assistant"]
    assert "banker" not in json.dumps(items)


async def test_an_episode_keeps_the_screened_words_only(
    make_session: Callable[..., Mem01Session], engine: BeliefEngine
) -> None:
    session = make_session("conv", "bob")
    await say(session, "My new API key is sk-proj-AbCdEfGhIjKlMnOpQrStUvWx1234 for the bot.")
    assert await session.flush_memory(timeout=30)
    [episode] = await engine.episodes("bob")
    assert "sk-proj" not in episode.content and "[redacted]" in episode.content


async def test_forget_and_erase_reach_the_words_too(
    make_session: Callable[..., Mem01Session], engine: BeliefEngine
) -> None:
    session = make_session("conv", "carol")
    await say(session, "I live in Porto")
    await say(session, "I collect old maps of Porto")
    assert await session.flush_memory(timeout=30)
    [porto] = await engine.history("carol")
    await session.memory.forget(session.user_id, porto.id)
    result = await session.recall("Where do I live? Porto")
    assert result is not None
    assert [q.episode.content for q in result.episodes] == ["I collect old maps of Porto"]

    receipt = await session.memory.erase(session.user_id, reinstate=True)
    assert receipt.deleted["episodes"] == 2
    assert await engine.episodes("carol") == []
    after = await session.recall("Where do I live? Porto")
    assert after is not None and after.empty


async def test_a_conversation_is_not_quoted_its_own_words(
    make_session: Callable[..., Mem01Session],
) -> None:
    same = make_session("maps-chat", "dave")
    await say(same, "I collect old maps of Lisbon.")
    assert await same.flush_memory(timeout=30)
    model = await say(same, "What do I collect?")
    # The transcript holds the words already: no quote of them in the block.
    assert same.last_recall is not None and same.last_recall.episodes == ()
    assert json.dumps(model.calls[0].input).count("old maps of Lisbon") == 1

    other = make_session("another-chat", "dave")
    model = await say(other, "What do I collect?")
    assert other.last_recall is not None
    quoted = [q.episode.content for q in other.last_recall.episodes]
    assert "I collect old maps of Lisbon." in quoted
    assert "old maps of Lisbon" in json.dumps(model.calls[0].input)


class Down(ScriptedModel):
    async def get_response(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("the model is down")


async def fails(session: Mem01Session, words: str) -> None:
    """A run that stores ``words`` and fails at its model call: they wait for an answer."""
    with pytest.raises(RuntimeError, match="the model is down"):
        await Runner.run(
            Agent(name="a", model=Down([])), words, session=session, run_config=session.run_config()
        )


async def test_a_message_taken_back_before_its_answer_is_not_remembered(
    make_session: Callable[..., Mem01Session], engine: BeliefEngine
) -> None:
    """A run failed; the application removes its question (``pop_item``) and asks again:
    memory holds what the transcript holds, not the words taken back."""

    session = make_session("c", "dora")
    await fails(session, "I live in Lisbn.")
    assert (await session.pop_item()) == {"role": "user", "content": "I live in Lisbn."}
    await say(session, "I live in Lisbon.")
    assert await session.flush_memory(timeout=30)
    assert [e.content for e in await engine.episodes("dora")] == ["I live in Lisbon."]

    await say(session, "I have a cat.")  # answered, hence enqueued: popping it changes nothing
    await session.pop_item()
    await session.pop_item()
    assert await session.flush_memory(timeout=30)
    assert [e.content for e in await engine.episodes("dora")] == [
        "I live in Lisbon.",
        "I have a cat.",
    ]


async def test_a_question_cleared_with_the_transcript_before_its_answer_is_not_remembered(
    make_session: Callable[..., Mem01Session], engine: BeliefEngine
) -> None:
    """A run failed; the application clears the conversation (``clear_session``) and starts
    over: the unanswered question goes with the transcript, as with ``pop_item``, instead of
    joining the next answer's turn. What was answered before stays remembered."""

    session = make_session("c", "cleo")
    await say(session, "I have a cat.")
    await fails(session, "I live in Lisbn.")
    await session.clear_session()
    assert await session.get_items() == []
    await say(session, "I live in Lisbon.")
    assert await session.flush_memory(timeout=30)
    assert [e.content for e in await engine.episodes("cleo")] == [
        "I have a cat.",
        "I live in Lisbon.",
    ]


async def test_an_answer_is_found_later_by_the_question_it_answered(
    make_session: Callable[..., Mem01Session], engine: BeliefEngine
) -> None:
    """ "Lisbon." says nothing alone: kept with the question before it, a later
    conversation's "Which city is my home?" finds it by its words."""
    monday = make_session("monday", "erin")
    await say(monday, "Hi, I'm Erin!", reply="Hello Erin! Which city do you call home these days?")
    await say(monday, "Lisbon, since May.", reply="Lovely.")
    assert await monday.flush_memory(timeout=30)
    assert [(e.content, e.context) for e in await engine.episodes("erin")] == [
        ("Hi, I'm Erin!", None),
        ("Lisbon, since May.", "Hello Erin! Which city do you call home these days?"),
    ]
    found = await engine.recall(
        "erin", RecallRequest("Which city is my home?", kinds="episodes", explain=True)
    )
    by_words = [e.episode.content for e in found.episodes if e.signals["text_rank"]]
    assert by_words == ["Lisbon, since May."]

    friday = make_session("friday", "erin")
    model = await say(friday, "Which city is my home?")
    sent = json.dumps(model.calls[0].input)
    # The user's words, with the question they answered (not the whole message before).
    assert '\\"Lisbon, since May.\\" (answering \\"Which city do you call home' in sent
    assert "Hello Erin!" not in sent


async def test_a_short_answer_to_the_assistants_question_becomes_a_belief(
    memories: MemoryFactory, make_session: Callable[..., Mem01Session], engine: BeliefEngine
) -> None:
    memory = memories(extractor=RuleExtractor())
    chat = make_session("chat", "fred", memory=memory)
    await say(chat, "Hi there!", reply="Hi Fred! Where do you live now?")
    await say(chat, "Lisbon.", reply="Lovely city.")
    assert await chat.flush_memory(timeout=30)
    [belief] = await engine.history("fred")
    assert (belief.content, belief.key) == ("Lives in Lisbon", "home.city")
    [source] = belief.sources
    assert source.evidence == "Lisbon."  # the user's words, not the statement they stand for
