"""A session's ``timezone`` is the user's: their turns are stamped with its local time, so
that "yesterday" is their yesterday, and the block's dates are days there. Real Runner,
real PostgreSQL, the rule extractor."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from agents import Agent, Runner
from agents.testing import ScriptedModel, assistant_message
from mcp.types import TextContent

from mem01session import Mem01Session, Memory
from mem01session.engine import BeliefEngine, RecallRequest
from mem01session.errors import ConfigError
from mem01session.extraction import RuleExtractor
from mem01session.shortterm import mem01_session_factory
from mem01session.tools.mcp_server import build_server
from tests.session.conftest import MemoryFactory
from tests.session.test_episodes_flow import Clock
from tests.tools.test_agent_tools import call, outputs, run

# 19:00 on 30 Nov in Los Angeles, 01:00 on 2 Dec in Tokyo: in UTC, both on 1 Dec.
EVENING_IN_LA = datetime(2026, 12, 1, 3, 0, tzinfo=UTC)
NIGHT_IN_TOKYO = datetime(2026, 12, 1, 16, 0, tzinfo=UTC)


async def say(session: Mem01Session, words: str) -> str:
    """One turn through the real Runner; what the model was sent."""
    model = ScriptedModel([[assistant_message("I see.")]])
    await Runner.run(
        Agent(name="a", model=model), words, session=session, run_config=session.run_config()
    )
    return json.dumps(model.calls[0].input)


@pytest.mark.parametrize(
    ("timezone", "at", "midnight_before", "moved", "said", "today"),
    [
        ("America/Los_Angeles", EVENING_IN_LA, datetime(2026, 11, 29, 8, tzinfo=UTC),
         "29 Nov 2026", "30 Nov 2026:", "Thursday, 3 Dec 2026"),
        ("Asia/Tokyo", NIGHT_IN_TOKYO, datetime(2026, 11, 30, 15, tzinfo=UTC),
         "1 Dec 2026", "2 Dec 2026:", "Saturday, 5 Dec 2026"),
        (None, EVENING_IN_LA, datetime(2026, 11, 30, tzinfo=UTC),  # UTC's days
         "30 Nov 2026", "1 Dec 2026:", "Friday, 4 Dec 2026"),
    ],
)  # fmt: skip
async def test_yesterday_and_the_dates_shown_are_the_users_days(
    memories: MemoryFactory,
    make_session: Callable[..., Mem01Session],
    engine: BeliefEngine,
    timezone: str | None,
    at: datetime,
    midnight_before: datetime,
    moved: str,
    said: str,
    today: str,
) -> None:
    clock = Clock(at)
    memory = memories(extractor=RuleExtractor(), clock=clock)
    monday = make_session("monday", "lena", memory=memory, timezone=timezone)
    await say(monday, "I moved to Lisbon yesterday.")
    await say(monday, "I lost my job as a banker yesterday.")  # no belief: a quote
    assert await monday.flush_memory(timeout=30)
    [lisbon] = await engine.history("lena")
    assert lisbon.content == "Lives in Lisbon"
    assert lisbon.valid_from == midnight_before  # the start of the user's yesterday

    clock.now = at + timedelta(days=3)
    friday = make_session("friday", "lena", memory=memory, timezone=timezone)
    sent = await say(friday, "When did I move, and when did I lose my job?")
    assert f"Lives in Lisbon ({moved})" in sent
    assert said + '\\n- \\"I lost my job as a banker yesterday.\\"' in sent
    assert "Today is" not in sent  # the dates answer it
    # A question reckoned from today is told the user's day.
    assert f"messages win.\\nToday is {today}.\\n" in await say(friday, "How long ago was that?")
    assert friday.timezone == timezone
    # The agent's search tool, bound to the session, dates in the same zone.
    model, _ = await run(friday, "Look it up.", call("search_memory", "s1", query="Lisbon"))
    assert f"Lives in Lisbon ({moved};" in outputs(model)["s1"]


async def test_a_date_reckoned_back_across_a_daylight_saving_change_is_the_users_day(
    memories: MemoryFactory, make_session: Callable[..., Mem01Session], engine: BeliefEngine
) -> None:
    """Said on 10 Apr in Los Angeles (PDT, UTC-7), "in March" starts on 1 Mar, which was
    in PST (UTC-8). Reckoned with the offset of the day it was said (what the job's ISO
    time keeps), it was 28 Feb 23:00 there, and shown as 28 Feb."""
    april = datetime(2026, 4, 10, 17, tzinfo=UTC)
    memory = memories(extractor=RuleExtractor(), clock=Clock(april))
    session = make_session("dst", "dana", memory=memory, timezone="America/Los_Angeles")
    await say(session, "I moved to Lisbon in March.")
    assert await session.flush_memory(timeout=30)
    [lisbon] = await engine.history("dana")
    assert lisbon.valid_from == datetime(2026, 3, 1, 8, tzinfo=UTC)  # midnight, PST
    sent = await say(session, "Since when do I live in Lisbon?")
    assert "Lives in Lisbon (1 Mar 2026)" in sent


async def test_a_user_who_travels_is_stamped_in_their_new_zone_from_then_on(
    memories: MemoryFactory, make_session: Callable[..., Mem01Session], engine: BeliefEngine
) -> None:
    memory = memories(extractor=RuleExtractor(), clock=Clock(NIGHT_IN_TOKYO))
    session = make_session("trip", "tomo", memory=memory, timezone="America/Los_Angeles")
    await say(session, "I moved to Lisbon yesterday.")
    session.timezone = "Asia/Tokyo"  # the app learns they are in Tokyo now
    await say(session, "I adopted a cat named Miso yesterday.")
    assert await session.flush_memory(timeout=30)
    starts = {b.content: b.valid_from for b in await engine.history("tomo")}
    assert starts == {
        "Lives in Lisbon": datetime(2026, 11, 30, 8, tzinfo=UTC),  # LA's 30 Nov
        "Has a cat named Miso": datetime(2026, 11, 30, 15, tzinfo=UTC),  # Tokyo's 1 Dec
    }


async def test_the_mcp_servers_search_dates_in_its_timezone(memory: Memory) -> None:
    """Kiritimati (UTC+14) and Pago Pago (UTC-11) are always on different days."""
    shown = {}
    for zone in ("Pacific/Kiritimati", "Pacific/Pago_Pago"):
        server = build_server(memory, user_id=f"kei-{zone[8:12]}", timezone=zone)
        await server.call_tool("remember", {"statement": "Lives in Lisbon"})
        found = await server.call_tool("search_memory", {"query": "Lisbon"})
        assert isinstance(found.content[0], TextContent)
        shown[zone] = found.content[0].text
    # The day it is there now: the engine's clock is the real one (the day may turn
    # between the write and the search, hence both ends).
    for zone, text in shown.items():
        days = {_day(datetime.now(ZoneInfo(zone)) - timedelta(minutes=m)) for m in (0, 5)}
        assert any(f"Lives in Lisbon ({d};" in text for d in days), (zone, text)


def _day(moment: datetime) -> str:
    return f"{moment.day} {moment:%b %Y}"


async def test_a_timezone_that_is_not_one_is_refused_by_name(memory: Memory) -> None:
    session = Mem01Session("conv", "ada", memory=memory, timezone="Europe/Lisbon")
    # "localtime" resolves on Linux, to whichever machine's zone reads it: not the user's.
    for bad in ("Mars/Olympus_Mons", "", 5, "../../etc/passwd", "localtime", "posixrules"):
        with pytest.raises(ConfigError, match="timezone must be an IANA time zone name"):
            Mem01Session("conv", "ada", memory=memory, timezone=bad)  # type: ignore[arg-type]
        with pytest.raises(ConfigError, match="timezone must be an IANA time zone name"):
            session.timezone = bad  # type: ignore[assignment]
        assert session.timezone == "Europe/Lisbon"  # unchanged
        with pytest.raises(ConfigError, match="timezone"):
            mem01_session_factory(memory, timezone=bad)
        with pytest.raises(ConfigError, match="timezone"):
            RecallRequest("where?", timezone=bad)  # type: ignore[arg-type]
        with pytest.raises(ConfigError, match="timezone"):
            build_server(memory, timezone=bad)  # type: ignore[arg-type]


async def test_where_no_session_names_a_zone_the_users_recorded_one_dates_the_memory(
    memories: MemoryFactory, make_session: Callable[..., Mem01Session], engine: BeliefEngine
) -> None:
    """The zone a user's session gave is recorded with their turns: the MCP server without
    ``--timezone`` dates in it; an agent's tools follow their own session."""
    clock = Clock(EVENING_IN_LA)  # 30 Nov in Los Angeles, 1 Dec in UTC
    memory = memories(extractor=RuleExtractor(), clock=clock)
    la = make_session("la", "rosa", memory=memory, timezone="America/Los_Angeles")
    await say(la, "I lost my job as a banker yesterday.")
    assert await la.flush_memory(timeout=30)
    assert await engine.user_timezone("rosa") == "America/Los_Angeles"

    clock.now = EVENING_IN_LA + timedelta(days=3)
    plain = make_session("plain", "rosa", memory=memory)  # no zone: its own days are UTC's
    await say(plain, "Hello again.")
    assert await plain.flush_memory(timeout=30)
    assert await engine.user_timezone("rosa") == "America/Los_Angeles"  # UTC said nothing

    server = build_server(memory)  # for every user, no zone of its own
    found = await server.call_tool("search_memory", {"user_id": "rosa", "query": "banker"})
    assert isinstance(found.content[0], TextContent)
    assert '30 Nov 2026:\n- "I lost my job' in found.content[0].text  # the user's day
    model, _ = await run(plain, "Look it up.", call("search_memory", "s1", query="banker"))
    assert '1 Dec 2026:\n- "I lost my job' in outputs(model)["s1"]  # as its block: UTC
