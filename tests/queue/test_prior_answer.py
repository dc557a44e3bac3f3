"""A claimed job comes with the answer its turn came after: the last assistant message of
the job before it in the same conversation, as that job's payload keeps it (screened).
The worker keeps its end as the context of the user's first episode of the turn, and the
extractor is shown it (``Turn.before``)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

import pytest

from mem01session.engine import BeliefEngine
from mem01session.extraction import Candidate, Extraction, Turn, TurnMessage
from mem01session.queue import JobStore, MemoryWorker

pytestmark = pytest.mark.asyncio(loop_scope="module")


class Silent:
    """Proposes nothing (the turn's words are kept as episodes only); notes what each turn
    was said after, as the extractor is shown it."""

    name = "silent-v1"

    def __init__(self) -> None:
        self.shown: dict[str, str | None] = {}

    async def extract(
        self, turn: Turn, candidates: Sequence[Candidate], now: datetime
    ) -> Extraction:
        self.shown[turn.messages[0].text] = turn.before
        return Extraction(ops=())


async def drain(engine: BeliefEngine) -> dict[str, str | None]:
    """Process every job; what each turn (by its first words) was shown to follow."""
    extractor = Silent()
    worker = MemoryWorker(engine, extractor)
    while await worker.run_once():
        pass
    return extractor.shown


async def enqueue(store: JobStore, user: str, session: str, *messages: tuple[str, str]) -> int:
    turn = [TurnMessage(role, text) for role, text in messages]  # type: ignore[arg-type]
    return await store.enqueue(user, session, turn, now=datetime.now(UTC))


async def test_each_answer_is_kept_with_the_question_of_its_own_conversation(
    module_engine: BeliefEngine, uid: str
) -> None:
    store = JobStore(module_engine.db)
    await enqueue(store, uid, "a", ("user", "I am back."), ("assistant", "Where do you live?"))
    await enqueue(store, uid, "b", ("user", "I slept in."), ("assistant", "Is your dog well?"))
    await enqueue(store, uid, "a", ("user", "Lisbon."), ("assistant", "Lovely."))
    await enqueue(store, uid, "b", ("user", "Rex is fine."), ("assistant", "Good."))
    shown = await drain(module_engine)
    expected = {
        "I am back.": None,  # nothing came before it in its conversation
        "I slept in.": None,
        "Lisbon.": "Where do you live?",  # not "Is your dog well?", said since
        "Rex is fine.": "Is your dog well?",
    }
    assert {e.content: e.context for e in await module_engine.episodes(uid)} == expected
    assert shown == expected  # the extractor reads the short answer with its question


async def test_a_turn_of_several_messages_gives_each_user_message_what_it_followed(
    module_engine: BeliefEngine, uid: str
) -> None:
    store = JobStore(module_engine.db)
    await enqueue(store, uid, "a", ("user", "Hello."), ("assistant", "What do you do?"))
    await enqueue(
        store,
        uid,
        "a",
        ("user", "I teach."),
        ("user", "Maths, mostly."),
        ("assistant", "Which school?"),
        ("user", "The one in Braga."),
        ("assistant", "Nice."),
    )
    await drain(module_engine)
    assert {e.content: e.context for e in await module_engine.episodes(uid)} == {
        "Hello.": None,
        "I teach.": "What do you do?",
        "Maths, mostly.": None,  # it followed the user's own words
        "The one in Braga.": "Which school?",
    }


async def test_the_context_is_the_screened_answer_and_its_end_only(
    module_engine: BeliefEngine, uid: str
) -> None:
    store = JobStore(module_engine.db)
    key = "sk-proj-AbCdEfGhIjKlMnOpQrStUvWx1234"
    chatter = "I looked at many things for you this morning, all of them long. " * 6
    answer = f"Here is what I did. {chatter}Your new key {key} is saved. Which team should use it?"
    await enqueue(store, uid, "a", ("user", "Set up my key."), ("assistant", answer))
    await enqueue(store, uid, "a", ("user", "The data team."), ("assistant", "Done."))
    await drain(module_engine)
    [_, team] = await module_engine.episodes(uid)
    assert team.context is not None and team.context.endswith("Which team should use it?")
    assert "sk-proj" not in team.context and "Your new key" in team.context
    assert "Here is" not in team.context  # the end of a long answer, not all of it
