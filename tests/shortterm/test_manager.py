"""SessionManager through the real Runner: keys, TTL on an injected clock, state, restart."""

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from agents import RunContextWrapper, SQLiteSession, function_tool
from agents.memory import Session

from mem01session.errors import ConfigError
from mem01session.shortterm import ManagedSession, SessionManager, TrimmingSession
from tests.shortterm.helpers import assert_model_input_clean, lookup, turn, user_texts


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


@function_tool
def remember_city(ctx: RunContextWrapper[ManagedSession], city: str) -> str:
    """Remember the user's city for this chat."""
    ctx.context.set_state("city", city)
    return f"remembered {city}"


@pytest.fixture
def clock() -> Clock:
    return Clock()


async def test_sessions_are_keyed_and_persist_their_transcript(tmp_path: Path) -> None:
    with SessionManager(tmp_path) as manager:
        a = manager.get_or_create("telegram", "u1", "chat-1")
        assert isinstance(a, Session)
        assert len(a.session_id) == 32 and int(a.session_id, 16) >= 0
        assert manager.get_or_create("telegram", "u1", "chat-1") is a
        b = manager.get_or_create("telegram", "u1", "chat-2")
        c = manager.get_or_create("slack", "u1", "chat-1")
        assert len({a.session_id, b.session_id, c.session_id}) == 3
        assert a.memory_user_id == "telegram:u1" == b.memory_user_id != c.memory_user_id

        await turn(a, "hello")
        model = await turn(a, "again")
        assert user_texts(model.calls[0].input) == ["hello", "again"]
        assert await b.get_items() == []
        assert manager.active_session_count == 3
        assert manager.remove("slack", "u1", "chat-1")
        assert not manager.remove("slack", "u1", "chat-1")
        assert manager.get("slack", "u1", "chat-1") is None
        assert manager.active_session_count == 2


def test_a_platform_with_a_colon_is_refused_so_two_users_never_share_a_memory(
    tmp_path: Path,
) -> None:
    with SessionManager(tmp_path) as manager:
        with pytest.raises(ConfigError, match="platform must not contain ':'"):
            manager.get_or_create("tg:x", "1", "c")  # would be the memory of ("tg", "x:1")
        assert manager.get_or_create("tg", "x:1", "c").memory_user_id == "tg:x:1"
        with pytest.raises(ConfigError, match="platform"):
            manager.get("tg:x", "1", "c")
        assert manager.active_session_count == 1


async def test_ttl_expiry_starts_a_fresh_conversation(tmp_path: Path, clock: Clock) -> None:
    manager = SessionManager(tmp_path, session_ttl_seconds=3600, clock=clock)
    first = manager.get_or_create("web", "u1", "c1")
    await turn(first, "my name is Ada")
    clock.advance(3599)
    assert manager.get("web", "u1", "c1") is first
    await turn(first, "still here")  # add_items touches
    assert first.last_activity_at == clock.now
    clock.advance(3599)
    assert manager.get("web", "u1", "c1") is first
    clock.advance(1)
    assert manager.get("web", "u1", "c1") is None
    assert manager.active_session_count == 0

    fresh = manager.get_or_create("web", "u1", "c1")
    assert fresh.session_id != first.session_id
    assert fresh.created_at == clock.now
    model = await turn(fresh, "who am I?")
    assert user_texts(model.calls[0].input) == ["who am I?"]
    old = SQLiteSession(first.session_id, tmp_path / "sessions.sqlite")
    assert await old.get_items() == []  # the expired transcript was deleted
    old.close()
    manager.close()


def test_cleanup_expired_counts_and_deletes(tmp_path: Path, clock: Clock) -> None:
    manager = SessionManager(tmp_path, session_ttl_seconds=60, clock=clock)
    for chat in ("a", "b", "c"):
        manager.get_or_create("p", "u", chat)
    clock.advance(30)
    manager.get_or_create("p", "u", "c").touch()
    clock.advance(30)
    assert manager.active_session_count == 1
    assert manager.cleanup_expired() == 2
    assert manager.cleanup_expired() == 0
    assert manager.get("p", "u", "c") is not None
    manager.close()


async def test_state_is_reachable_from_tools_and_survives_restart(
    tmp_path: Path, clock: Clock
) -> None:
    manager = SessionManager(tmp_path, clock=clock)
    session = manager.get_or_create("discord", "u9", "dm")
    await turn(session, "I'm in Oslo", tool=remember_city, args={"city": "Oslo"}, context=session)
    session.set_state("prefs", {"units": "metric", "tags": [1, 2]})
    assert session.get_state("city") == "Oslo"
    with pytest.raises(ConfigError, match="bad"):
        session.set_state("bad", object())
    view = await session.get_items()
    created, session_id = session.created_at, session.session_id
    manager.close()

    clock.advance(60)
    restarted = SessionManager(tmp_path, clock=clock)
    again = restarted.get("discord", "u9", "dm")
    assert again is not None
    assert again.session_id == session_id and again.created_at == created
    assert again.state == {"city": "Oslo", "prefs": {"units": "metric", "tags": [1, 2]}}
    assert await again.get_items() == view
    again.delete_state("prefs")
    assert restarted.get("discord", "u9", "dm").state == {"city": "Oslo"}  # type: ignore[union-attr]
    restarted.close()


@pytest.mark.parametrize(
    ("write", "message"),
    [
        (lambda s: s.set_state(5, "five"), "keys must be strings, got int"),
        (lambda s: s.set_state(None, 1), "keys must be strings, got NoneType"),
        (lambda s: s.update_state({"ok": 1, 7: 2}), "keys must be strings, got int"),
        (lambda s: s.delete_state(("k",)), "keys must be strings, got tuple"),
        (lambda s: s.get_state(5), "keys must be strings, got int"),
        (lambda s: s.set_state("ratio", float("nan")), "'ratio' is not JSON-serializable"),
        (lambda s: s.update_state({"ok": 1, "inf": float("inf")}), "'inf' is not JSON"),
        # stored, then unreadable (RecursionError); deeper still, a RecursionError at once
        (lambda s: s.set_state("deep", _nested(500)), "'deep' nests deeper than 32 levels"),
        (lambda s: s.set_state("deep", _nested(5000)), "'deep' nests deeper than 32 levels"),
    ],
)
def test_state_that_json_would_change_is_refused_and_nothing_is_written(
    tmp_path: Path, write: Callable[[ManagedSession], object], message: str
) -> None:
    """JSON turns a key 5 into "5" (then get_state(5) finds nothing) and has no NaN: such
    a write is refused, naming what was wrong, and the state is unchanged."""
    manager = SessionManager(tmp_path)
    session = manager.get_or_create("p", "u", "c")
    session.set_state("kept", 1)
    with pytest.raises(ConfigError, match=message):
        write(session)
    assert session.state == {"kept": 1}
    manager.close()
    with SessionManager(tmp_path) as again:
        assert again.get_or_create("p", "u", "c").state == {"kept": 1}


def _nested(depth: int) -> list[object]:
    value: list[object] = []
    for _ in range(depth - 1):
        value = [value]
    return value


def test_a_chat_kept_past_its_expiry_refuses_state_instead_of_losing_it(
    tmp_path: Path, clock: Clock
) -> None:
    from mem01session.errors import MemoryClosedError

    manager = SessionManager(tmp_path, session_ttl_seconds=60, clock=clock)
    stale = manager.get_or_create("p", "u", "c")
    clock.advance(181)
    fresh = manager.get_or_create("p", "u", "c")  # the chat starts again
    with pytest.raises(MemoryClosedError, match="expired or was replaced"):
        stale.set_state("x", 1)  # it was taken, and saved nowhere
    assert fresh.state == {}
    # its transcript's methods too (they raised the SDK's "SQLiteSession is closed")
    with pytest.raises(MemoryClosedError, match="expired, was replaced or removed"):
        asyncio.run(stale.get_items())
    manager.close()


async def test_max_session_history_keeps_recent_items_and_tool_pairs(tmp_path: Path) -> None:
    manager = SessionManager(tmp_path, max_session_history=4)
    session = manager.get_or_create("p", "u", "c")
    await turn(session, "one")
    await turn(session, "weather?", tool=lookup, call_id="w")  # user, call, output, answer
    stored = await session.transcript.get_items()
    assert user_texts(stored) == ["weather?"] and len(stored) == 4
    await turn(session, "two")
    stored = await session.transcript.get_items()
    # the newest 4 would start at the tool output: the orphan is dropped with its call
    assert [i.get("type", i.get("role")) for i in stored] == ["message", "user", "message"]
    model = await turn(session, "three")
    assert_model_input_clean(model)
    manager.close()


async def test_session_factory_composes_a_trimming_session(tmp_path: Path) -> None:
    seen: list[tuple[str, str]] = []

    def factory(session_id: str, memory_user_id: str, inner: SQLiteSession) -> Session:
        seen.append((session_id, memory_user_id))
        return TrimmingSession(inner, max_turns=1)

    manager = SessionManager(tmp_path, session_factory=factory)
    session = manager.get_or_create("p", "u", "c")
    assert seen == [(session.session_id, "p:u")]
    assert isinstance(session.session, TrimmingSession)
    await turn(session, "one")
    model = await turn(session, "two")
    assert user_texts(model.calls[0].input) == ["one", "two"]
    model = await turn(session, "three")
    assert user_texts(model.calls[0].input) == ["two", "three"]
    manager.close()


async def test_concurrent_tasks_on_one_session_lose_nothing(tmp_path: Path) -> None:
    manager = SessionManager(tmp_path)
    session = manager.get_or_create("p", "u", "c")

    async def writer(n: int) -> None:
        await session.add_items(
            [{"role": "user", "content": f"u{n:03}"}, {"role": "assistant", "content": "ok"}]
        )

    await asyncio.gather(*(writer(n) for n in range(50)))
    assert sorted(user_texts(await session.get_items())) == [f"u{n:03}" for n in range(50)]
    manager.close()


def test_threads_racing_for_one_key_get_one_session(tmp_path: Path) -> None:
    manager = SessionManager(tmp_path)
    ids: list[str] = []
    barrier = threading.Barrier(8)

    def worker() -> None:
        barrier.wait()
        for _ in range(5):
            ids.append(manager.get_or_create("p", "u", "c").session_id)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(ids) == 40 and len(set(ids)) == 1
    manager.close()


@pytest.mark.parametrize(
    ("kwargs", "named"),
    [
        ({"session_ttl_seconds": 0}, "session_ttl_seconds"),
        ({"max_session_history": 0}, "max_session_history"),
    ],
)
def test_validation(tmp_path: Path, kwargs: dict[str, Any], named: str) -> None:
    with pytest.raises(ValueError, match=named):
        SessionManager(tmp_path, **kwargs)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"folder": 5}, "folder must be a path (str or Path), got 5"),
        ({"folder": ""}, "folder must be a path (str or Path), got ''"),
        ({"session_factory": "mem01"}, "session_factory must be callable, got str"),
        ({"clock": "utc"}, "clock must be callable, got str"),
    ],
)
def test_a_manager_argument_of_the_wrong_kind_is_refused(
    tmp_path: Path, kwargs: dict[str, Any], message: str
) -> None:
    """A folder given as a number raised pathlib's TypeError; a factory or clock that is not
    callable failed at the first chat."""
    options: dict[str, Any] = {"folder": tmp_path, **kwargs}
    with pytest.raises(ConfigError, match=re.escape(message)):
        SessionManager(**options)


def test_empty_key_parts_are_refused(tmp_path: Path) -> None:
    manager = SessionManager(tmp_path)
    for args, named in ((("", "u", "c"), "platform"), (("p", "", "c"), "user_id")):
        with pytest.raises(ValueError, match=named):
            manager.get_or_create(*args)
    with pytest.raises(ValueError, match="chat_id"):
        manager.get("p", "u", "")
    manager.close()
