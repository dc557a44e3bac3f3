"""The agent's memory tools through the real Runner: remember in one conversation, search in
the next; the ledger names the tool and the conversation; refusals are tool results."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from agents import Agent, Runner
from agents.testing import ScriptedModel, assistant_message, function_call

from mem01session import Mem01Session, memory_tools
from mem01session.engine import BeliefEngine
from mem01session.engine.ops import MAX_CONTENT_CHARS, Op, Provenance
from mem01session.errors import ConfigError
from mem01session.extraction import Candidate, Extraction, Turn
from mem01session.session.recalled import NOT_KEPT
from mem01session.tools.agent import TOOL_NAMES
from tests.pg import locked
from tests.session.conftest import Gate, MemoryFactory

Step = list[Any]


async def run(session: Mem01Session, text: str, *steps: Step) -> tuple[ScriptedModel, Any]:
    """One run whose model makes the scripted ``steps`` (tool calls, then an answer)."""
    model = ScriptedModel([*steps, [assistant_message("Done.")]])
    agent = Agent(name="a", model=model, tools=memory_tools(session))
    result = await Runner.run(agent, text, session=session, run_config=session.run_config())
    return model, result


def outputs(model: ScriptedModel) -> dict[str, str]:
    """Every tool result the model was shown, by call id."""
    found: dict[str, str] = {}
    for call in model.calls:
        for item in call.input if isinstance(call.input, list) else []:
            if isinstance(item, dict) and item.get("type") == "function_call_output":
                found[str(item["call_id"])] = str(item["output"])
    return found


def call(name: str, call_id: str, **arguments: Any) -> Step:
    return [function_call(name, arguments, call_id=call_id)]


async def test_remembered_in_one_conversation_found_in_the_next(
    make_session: Callable[..., Mem01Session], engine: BeliefEngine
) -> None:
    monday = make_session("conv-monday", "ana")
    model, _ = await run(
        monday,
        "Please remember that I live in Lisbon.",
        call("remember", "call-r1", statement="Lives in Lisbon", key="home.city"),
    )
    [belief] = await engine.history("ana")
    assert (belief.content, belief.key, belief.status) == ("Lives in Lisbon", "home.city", "active")
    assert outputs(model)["call-r1"] == f"Remembered (#{belief.id}): Lives in Lisbon"
    [event] = await engine.ledger("ana", belief_id=belief.id)
    assert (event.op, event.source, event.session_id) == ("ADD", "agent-tool", "conv-monday")
    [source] = (await engine.get("ana", belief.id)).sources
    assert (source.extractor, source.session_id, source.item_ref) == (
        "agent-tool",
        "conv-monday",
        "call-r1",
    )

    friday = make_session("conv-friday", "ana")
    model, result = await run(
        friday,
        "What do you know about where I live?",
        call("search_memory", "call-s1", query="where does the user live"),
        call("correct_memory", "call-c1", id=belief.id + 1000, statement="Lives in Porto"),
    )
    assert result.final_output == "Done."  # the bad id did not end the run
    shown = outputs(model)
    assert "Lives in Lisbon" in shown["call-s1"] and f"#{belief.id}" in shown["call-s1"]
    assert shown["call-c1"] == f"error: belief #{belief.id + 1000} does not exist for this user"
    # What the search returned stays out of the transcript, as the injected block does.
    stored = await friday.get_items()
    [kept] = [
        i for i in stored if i.get("type") == "function_call_output" and i["call_id"] == "call-s1"
    ]
    assert kept["output"] == NOT_KEPT
    assert "Lives in Lisbon" not in json.dumps(stored)
    assert [b.content for b in await engine.history("ana")] == ["Lives in Lisbon"]


async def test_a_key_replaces_and_a_restatement_confirms(
    make_session: Callable[..., Mem01Session], engine: BeliefEngine
) -> None:
    session = make_session("c1", "bea")
    model, _ = await run(
        session,
        "I moved.",
        call("remember", "r1", statement="Lives in Lisbon", key="home.city"),
        call("remember", "r2", statement="Lives in Porto", key="Home.City"),
        call("remember", "r3", statement="lives in porto", key=None),
        call("remember", "r4", statement="Has a cat named Miso"),
    )
    history = {b.content: b for b in await engine.history("bea")}
    lisbon, porto = history["Lives in Lisbon"], history["Lives in Porto"]
    assert (lisbon.status, lisbon.superseded_by, porto.key) == ("superseded", porto.id, "home.city")
    shown = outputs(model)
    assert f"replaces #{lisbon.id}" in shown["r2"]
    assert shown["r3"] == f"Already remembered, now confirmed (#{porto.id}): lives in porto"
    assert history["Has a cat named Miso"].key is None
    ops = [(e.op, e.source) for e in await engine.ledger("bea")]
    assert ops == [
        ("ADD", "agent-tool"),
        ("SUPERSEDE", "agent-tool"),
        ("CONFIRM", "agent-tool"),
        ("ADD", "agent-tool"),
    ]


async def test_refusals_are_tool_results_and_change_nothing(
    make_session: Callable[..., Mem01Session],
    engine: BeliefEngine,
    caplog: pytest.LogCaptureFixture,
) -> None:
    theirs = await engine.apply(
        "other-user", [Op.add("Lives in Oslo")], provenance=Provenance(extractor="test")
    )
    other_id = theirs.changes[0].belief_id
    mine = await engine.apply("cid", [Op.add("Likes tea")], provenance=Provenance(extractor="test"))
    my_id = mine.changes[0].belief_id
    session = make_session("c1", "cid")
    model, result = await run(
        session,
        "Do some memory things.",
        call("remember", "empty", statement="   "),
        call("remember", "long", statement="x" * 5000),
        call("remember", "secret", statement="API key is sk-proj-SENTINELabcdefghijklmnopqrstuvwx"),
        call("correct_memory", "theirs", id=other_id, statement="Lives in Rome"),
        call("forget_memory", "theirs-f", id=other_id, reason="gone"),
        call("correct_memory", "same", id=my_id, statement="Likes tea"),
        call("search_memory", "oslo", query="Oslo"),
        call("forget_memory", "mine", id=my_id, reason="switched to coffee"),
        call("forget_memory", "again", id=my_id, reason="twice"),
    )
    assert result.final_output == "Done."
    shown = outputs(model)
    assert shown["empty"] == "error: statement is empty: say what to remember"
    assert shown["long"] == (
        f"error: statement is 5000 characters, over the limit of {MAX_CONTENT_CHARS}: "
        "a belief is one short fact; say it shorter"
    )
    doc = Path(__file__).parents[2] / "docs" / "tools-and-mcp.md"
    readme = " ".join(doc.read_text("utf-8").split())
    assert f"one over the {MAX_CONTENT_CHARS:,} characters a belief holds" in readme
    assert shown["secret"].startswith("error: not stored: the statement held a secret")
    assert "SENTINEL" not in json.dumps(shown)  # the refusal never quotes the secret
    # Logged for the operator without the secret, and not as an extraction's doing.
    [logged] = [r.getMessage() for r in caplog.records if "held a secret" in r.getMessage()]
    assert logged == "memory: a statement was not stored: it held a secret (api key)"
    for ref in ("theirs", "theirs-f"):  # another user's belief: as if it did not exist
        assert f"belief #{other_id} does not exist for this user" in shown[ref]
    assert shown["same"] == f"error: belief #{my_id} already says that; nothing to correct"
    assert "Oslo" not in shown["oslo"]
    assert shown["mine"].startswith(f"Forgotten: #{my_id} (Likes tea)")
    assert shown["again"] == (
        f"error: belief #{my_id} is invalidated; only an active belief can be forgotten"
    )
    assert [(b.content, b.status) for b in await engine.history("cid")] == [
        ("Likes tea", "invalidated")
    ]
    [_, forget] = await engine.ledger("cid")
    assert (forget.op, forget.source, forget.reason) == (
        "FORGET",
        "agent-tool",
        "switched to coffee",
    )
    assert [(b.content, b.status) for b in await engine.history("other-user")] == [
        ("Lives in Oslo", "active")
    ]


async def test_arguments_that_do_not_fit_are_told_what_was_wrong(
    make_session: Callable[..., Mem01Session], engine: BeliefEngine
) -> None:
    # The SDK's own answer said only "An error occurred while running the tool".
    session = make_session("c1", "cid")
    model, result = await run(
        session,
        "Do some memory things.",
        call("forget_memory", "word-id", id="abc", reason="gone"),
        call("search_memory", "no-query", query=None),
        call("remember", "long-key", statement="Likes jazz", key="k" * 100_000),  # was cut
    )
    assert result.final_output == "Done."
    shown = outputs(model)
    assert shown["word-id"] == (
        "error: the arguments must be one JSON object: id (integer, required), "
        "reason (string, required); call forget_memory again"
    )
    assert shown["no-query"].startswith("error: the arguments must be one JSON object: query")
    assert shown["long-key"] == (
        "error: key is 100000 characters, over the limit of 200: a key names one kind of "
        "fact (home.city); make it shorter"
    )
    assert await engine.history("cid") == []


async def test_an_erased_user_is_refused_until_reinstated(
    make_session: Callable[..., Mem01Session], engine: BeliefEngine
) -> None:
    session = make_session("c1", "dan")
    model, _ = await run(session, "Remember.", call("remember", "r1", statement="Owns a boat"))
    [boat] = await engine.history("dan")
    await engine.erase_user("dan")
    model, _ = await run(
        session,
        "Remember again.",
        call("remember", "r2", statement="Owns a bike"),
        call("forget_memory", "f1", id=boat.id, reason="sold"),
    )
    shown = outputs(model)
    erased = (
        "error: this user's memory was erased; nothing can be written until the user is reinstated"
    )
    assert shown["r2"] == erased and shown["f1"] == erased
    assert await engine.history("dan") == []
    await engine.reinstate_user("dan")
    model, _ = await run(session, "Once more.", call("remember", "r3", statement="Owns a bike"))
    assert outputs(model)["r3"].startswith("Remembered (#")
    assert [b.content for b in await engine.history("dan")] == ["Owns a bike"]


class GatedExtractor:
    """An extractor stuck in its LLM call until the test lets it go."""

    name = "gated"

    def __init__(self) -> None:
        self.entered = Gate()
        self.release = Gate()

    async def extract(
        self, turn: Turn, candidates: Sequence[Candidate], now: datetime
    ) -> Extraction:
        self.entered.set()
        await self.release.wait()
        return Extraction(ops=())


async def test_a_tool_call_never_waits_for_the_worker(
    make_session: Callable[..., Mem01Session], engine: BeliefEngine, memories: MemoryFactory
) -> None:
    gated = GatedExtractor()
    session = make_session("c1", "eve", memory=memories(extractor=gated))
    async with asyncio.timeout(60):  # a guard against a hang, not a measurement
        model, _ = await run(session, "I like jazz.")  # its turn goes to the worker
        await gated.entered.wait()  # the worker is inside the extractor now
        model, _ = await run(
            session,
            "Remember that I play the piano.",
            call("remember", "r1", statement="Plays the piano"),
            call("search_memory", "s1", query="piano"),
        )
    shown = outputs(model)
    assert shown["r1"].startswith("Remembered (#") and "Plays the piano" in shown["s1"]
    assert not gated.release.is_set()  # the worker was still busy with the first turn
    gated.release.set()


async def test_a_tool_call_the_database_does_not_answer_is_cut_short_and_changes_nothing(
    make_session: Callable[..., Mem01Session], engine: BeliefEngine, db_url: str
) -> None:
    """A lock held elsewhere (a migration, ``VACUUM FULL``) or a server that stopped
    answering: the call's result says memory is out of reach, and the run goes on."""
    session = make_session("c1", "ana", recall_wait=0.5)
    model = ScriptedModel([call("remember", "r1", statement="Lives in Lisbon"),
                           [assistant_message("Done.")]])  # fmt: skip
    agent = Agent(name="a", model=model, tools=memory_tools(session, timeout=0.3))
    with locked(db_url, "beliefs"):
        async with asyncio.timeout(60):  # a guard against a hang, not a measurement
            result = await Runner.run(
                agent, "Remember: I live in Lisbon.", session=session,
                run_config=session.run_config(),
            )  # fmt: skip
    assert result.final_output == "Done."
    assert outputs(model)["r1"] == (
        "error: memory is unavailable right now (no answer within 0.3 s)"
    )
    assert await engine.history("ana") == []  # the cut write left nothing behind


def test_a_timeout_that_is_not_a_number_of_seconds_is_refused(
    make_session: Callable[..., Mem01Session],
) -> None:
    session = make_session("c1", "ana")
    for bad in (-1, "10", float("nan"), True):
        with pytest.raises(ConfigError, match=r"timeout must be a number of seconds"):
            memory_tools(session, timeout=bad)  # type: ignore[arg-type]


def test_a_session_or_budget_of_the_wrong_kind_is_refused_when_the_tools_are_made(
    make_session: Callable[..., Mem01Session], tmp_path: Path
) -> None:
    """``memory_tools("alice")`` raised AttributeError; a bad budget was a MemoryToolError
    (a tool call's refusal) rather than the caller's ConfigError. A SessionManager's
    session, which wraps a Mem01Session, is accepted."""
    from mem01session.shortterm import SessionManager, mem01_session_factory

    session = make_session("c1", "ana")
    with pytest.raises(ConfigError, match=r"session must be a Mem01Session .* got str"):
        memory_tools("alice")  # type: ignore[arg-type]
    for bad in (0, "800", True):
        with pytest.raises(ConfigError, match="max_tokens must be a positive integer"):
            memory_tools(session, max_tokens=bad)  # type: ignore[arg-type]
    with SessionManager(tmp_path, session_factory=mem01_session_factory(session.memory)) as chats:
        managed = chats.get_or_create("telegram", "42", "chat-1")
        assert len(memory_tools(managed)) == len(TOOL_NAMES)  # type: ignore[arg-type]


def test_the_tools_and_their_schemas() -> None:
    from agents import SQLiteSession

    from mem01session import Memory
    from mem01session.config import Settings

    memory = Memory(Settings.from_env({}))
    session = Mem01Session("c", "u", memory=memory, inner=SQLiteSession("c"))
    tools = memory_tools(session)
    assert tuple(t.name for t in tools) == TOOL_NAMES
    schema = {t.name: t.params_json_schema for t in tools}
    assert set(schema["remember"]["properties"]) == {"statement", "key"}
    assert schema["correct_memory"]["properties"]["id"]["type"] == "integer"
    assert all(t.strict_json_schema and t.description for t in tools)
