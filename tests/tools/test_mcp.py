"""``mem01session mcp`` as a real subprocess, driven by the SDK's ``MCPServerStdio``: the
tools listed and called, beliefs landing in PostgreSQL, users never crossed, erase obeyed."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest
from agents import Agent, Runner
from agents.mcp import MCPServerStdio
from agents.testing import ScriptedModel, assistant_message, function_call

from mem01session.embeddings import HashingEmbedder
from mem01session.engine import BeliefEngine
from mem01session.tools.agent import TOOL_NAMES
from tests.conftest import TEST_DIM

pytestmark = pytest.mark.slow

TIMEOUT = 120.0  # a guard against a hang on a busy machine, not a measurement


def stdio_server(db_url: str, home: Path, *args: str) -> MCPServerStdio:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "OPENAI_API_KEY")}
    env |= {
        "MEM01_DATABASE_URL": db_url,
        "MEM01_EMBEDDING_MODEL": HashingEmbedder(TEST_DIM).name,
        "MEM01_HOME": str(home),
    }
    return MCPServerStdio(
        params={
            "command": sys.executable,
            "args": ["-m", "mem01session", "mcp", *args],
            "env": env,
        },
        client_session_timeout_seconds=TIMEOUT,
        name="memory",
    )


def text(result: Any) -> str:
    return "\n".join(part.text for part in result.content)


async def test_tools_over_stdio_for_one_user(
    db_url: str, engine: BeliefEngine, tmp_path: Path
) -> None:
    async with stdio_server(db_url, tmp_path, "--user", "ana") as server:
        tools = await server.list_tools()
        assert tuple(t.name for t in tools) == TOOL_NAMES
        assert all("user_id" not in t.input_schema["properties"] for t in tools)

        stored = await server.call_tool(
            "remember", {"statement": "Lives in Lisbon", "key": "home.city"}
        )
        assert not stored.is_error and text(stored).startswith("Remembered (#")
        found = await server.call_tool("search_memory", {"query": "where does the user live"})
        assert "Lives in Lisbon" in text(found)

        # An SDK agent uses the same server's tools.
        model = ScriptedModel(
            [
                [function_call("remember", {"statement": "Has a cat named Miso"}, call_id="c1")],
                [assistant_message("Noted.")],
            ]
        )
        result = await Runner.run(
            Agent(name="a", model=model, mcp_servers=[server]), "I have a cat, Miso."
        )
        assert result.final_output == "Noted."

        refused = await server.call_tool("correct_memory", {"id": 999999, "statement": "x"})
        assert refused.is_error and "belief #999999 does not exist for this user" in text(refused)

        # The client is told each argument's type; a value of another type is refused by
        # the tool, which never quotes it (the server's own validation took `true` for
        # belief #1, and quoted a pasted key back).
        [forget] = [t for t in tools if t.name == "forget_memory"]
        assert forget.input_schema["properties"]["id"]["type"] == "integer"
        secret = "sk-proj-" + "abcdefghijklmnopqrstuvwxyz0123456789ABCD"
        for bad in (True, 2.0, secret):
            wrong = await server.call_tool("forget_memory", {"id": bad, "reason": "x"})
            assert wrong.is_error and "id must be a belief's number" in text(wrong)
            assert "abcdefghijklmnop" not in text(wrong)
        wrong = await server.call_tool("search_memory", {"query": "x", "include_history": "yes"})
        assert wrong.is_error and "include_history must be true or false" in text(wrong)

    beliefs = {b.content: b for b in await engine.history("ana")}
    assert set(beliefs) == {"Lives in Lisbon", "Has a cat named Miso"}
    lisbon = await engine.get("ana", beliefs["Lives in Lisbon"].id)
    [source] = lisbon.sources
    assert source.extractor == "mcp-tool" and (source.session_id or "").startswith("mcp:")
    assert (source.item_ref or "").startswith("mcp-request-")
    [event] = await engine.ledger("ana", belief_id=lisbon.id)
    assert (event.op, event.source) == ("ADD", "mcp-tool")


async def test_one_server_many_users_never_crossed_and_erase_obeyed(
    db_url: str, engine: BeliefEngine, tmp_path: Path
) -> None:
    async with stdio_server(db_url, tmp_path) as server:
        tools = await server.list_tools()
        assert all(t.input_schema["required"][0] == "user_id" for t in tools)

        async def call(tool: str, user: str, **arguments: Any) -> Any:
            return await server.call_tool(tool, {"user_id": user, **arguments})

        await call("remember", "ana", statement="Lives in Zanzibar")
        await call("remember", "bob", statement="Lives in Oslo")
        [ana_id] = [b.id for b in await engine.history("ana")]

        assert "Zanzibar" not in text(await call("search_memory", "bob", query="Zanzibar"))
        assert "Oslo" in text(await call("search_memory", "bob", query="where does bob live"))
        for tool, arguments in (
            ("correct_memory", {"id": ana_id, "statement": "Lives in Rome"}),
            ("forget_memory", {"id": ana_id, "reason": "moved"}),
        ):
            refused = await call(tool, "bob", **arguments)
            assert refused.is_error and f"belief #{ana_id} does not exist for this user" in text(
                refused
            )
        assert (await engine.get("ana", ana_id)).status == "active"

        await engine.erase_user("ana")
        refused = await call("remember", "ana", statement="Lives in Lima")
        assert refused.is_error and "erased" in text(refused)
        assert await engine.history("ana") == []
        await engine.reinstate_user("ana")
        assert not (await call("remember", "ana", statement="Lives in Lima")).is_error

        assert (await call("remember", "", statement="x")).is_error  # no user, no write

    assert [b.content for b in await engine.history("ana")] == ["Lives in Lima"]
    assert [b.content for b in await engine.history("bob")] == ["Lives in Oslo"]
