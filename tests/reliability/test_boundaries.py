"""What a user types cannot switch memory off: odd characters, a megabyte, a turn the database
refuses, a secret, an erased user. Real PostgreSQL, the real Runner, the rule extractor."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path

from sqlalchemy import text

from mem01session import Mem01Session, Op, Provenance
from mem01session.db import Database
from mem01session.engine import BeliefEngine
from mem01session.extraction import RuleExtractor
from mem01session.queue import JobStore
from mem01session.queue.turns import MAX_MESSAGE_CHARS, storable_text
from mem01session.session import session_health
from tests.reliability.harness import say
from tests.session.conftest import MemoryFactory


def rules_session(
    make_session: Callable[..., Mem01Session], memories: MemoryFactory, sid: str, user: str
) -> Mem01Session:
    return make_session(sid, user, memory=memories(extractor=RuleExtractor()))


async def active(engine: BeliefEngine, user: str) -> set[str]:
    return {b.content for b in await engine.history(user) if b.status == "active"}


async def test_nul_and_lone_surrogates_never_block_the_turns_behind_them(
    make_session: Callable[..., Mem01Session], memories: MemoryFactory, engine: BeliefEngine
) -> None:
    session = rules_session(make_session, memories, "odd", "olive")
    said = ["I like black\x00 coffee.", "I live in Lisbon.", "I like tea\udcff.", "I like chess."]
    for line in said:
        await say(session, line)
    assert await session.flush_memory(timeout=30)
    assert session.last_memory_error is None
    assert session_health(session).unsent_turns == 0 and session_health(session).dropped_turns == 0
    beliefs = await active(engine, "olive")
    assert {"Lives in Lisbon", "Likes chess", "Likes black coffee"} <= beliefs
    # The transcript keeps what the SDK gave it; only the copy sent to memory was cleaned.
    stored = [i["content"] for i in await session.get_items() if i.get("role") == "user"]
    assert stored == said
    await session.aclose()


async def test_a_megabyte_message_is_recorded_and_the_run_returns(
    make_session: Callable[..., Mem01Session],
    memories: MemoryFactory,
    engine: BeliefEngine,
    db: Database,
) -> None:
    session = rules_session(make_session, memories, "big", "hugo")
    huge = "I like hiking. " + "x" * 1_000_000
    async with asyncio.timeout(120):  # a deadlock guard, not a timing assertion
        await say(session, huge)
        assert await session.flush_memory(timeout=60)
    async with db.sa_engine.connect() as conn:
        payload = (await conn.execute(text("SELECT payload FROM memory_jobs"))).scalar_one()
    user_text = payload["messages"][0]["text"]
    assert len(user_text) < MAX_MESSAGE_CHARS + 100
    assert user_text.startswith("I like hiking. xxx") and "characters cut ..." in user_text
    assert "Likes hiking" in await active(engine, "hugo")
    await session.aclose()


async def test_what_the_user_says_after_a_long_paste_is_remembered(
    make_session: Callable[..., Mem01Session],
    memories: MemoryFactory,
    engine: BeliefEngine,
) -> None:
    """A message past the cap keeps its start and its end: the words a user says about
    themselves before or after what they paste. (It kept the start only.)"""
    session = rules_session(make_session, memories, "paste", "petra")
    paste = "Minutes of the meeting. " * 2000
    await say(session, f"Can you shorten this? {paste} I live in Lisbon.")
    assert await session.flush_memory(timeout=60)
    assert "Lives in Lisbon" in await active(engine, "petra")
    [episode] = [e for e in await engine.episodes("petra") if "Lisbon" in e.content]
    assert episode.content.endswith("I live in Lisbon.")
    await session.aclose()


def test_a_word_the_cap_would_split_is_left_out_whole() -> None:
    """No fragment of a secret the cut falls in gets past the screen unrecognized."""
    key = "sk-proj-" + "Zq8wR2xT" * 6
    half = MAX_MESSAGE_CHARS // 2
    words = ("x " * 6000).strip()
    for start in (half - 10, len(words) + len(key) - half - 8):  # across each cut
        message = words[:start] + " " + key + " " + words[start:]
        kept = storable_text(message)
        assert len(kept) <= MAX_MESSAGE_CHARS + 40 and "characters cut" in kept
        assert not any(key[i : i + 8] in kept for i in range(len(key) - 8)), start
    # A run longer than a word (a blob; text written without spaces) is cut, not dropped.
    assert storable_text("a" * 5000 + " " + "b" * 5000) == (
        "a" * 4000 + " [... 2001 characters cut ...] " + "b" * 4000
    )


async def test_a_long_message_in_a_language_written_without_spaces_keeps_its_ends(
    make_session: Callable[..., Mem01Session], memories: MemoryFactory, engine: BeliefEngine
) -> None:
    """Chinese, Japanese or Thai text has no spaces for the cut to stop at: the word-sized
    rule left out each end whole, and a long message was stored as the marker alone."""
    session = rules_session(make_session, memories, "zh", "zhang")
    start, end = "你好，请帮我总结这篇文章。", "对了，我的猫叫小米。"
    message = start + "会议纪要，第一项议程讨论了预算。" * 700 + end
    assert len(message) > MAX_MESSAGE_CHARS
    await say(session, message)
    assert await session.flush_memory(timeout=60)
    said = " ".join(e.content for e in await engine.episodes("zhang"))
    assert start in said and end in said
    await session.aclose()


async def test_a_secret_whose_label_the_cut_leaves_out_is_still_screened(
    make_session: Callable[..., Mem01Session], memories: MemoryFactory, db: Database
) -> None:
    """A cut that fell in a secret's label ("password:", "Bearer") left its value after the
    cut unrecognized: the screen now reads each kept part with what lies past its cut."""
    half = MAX_MESSAGE_CHARS // 2
    filler = ("x " * 6000).strip()
    cases = [
        ("my password: hunter2xyz", "password:", "hunter2xyz"),
        ("the wifi passphrase is tulip-orbit-55", "passphrase", "tulip-orbit-55"),
        ("Authorization: Bearer abcdefghijklmnop1234", "Bearer", "abcdefghijklmnop1234"),
        ("my secret: velvet-anchor-42", "secret:", "velvet-anchor-42"),
    ]
    session = rules_session(make_session, memories, "cut", "carla")
    for secret, label, value in cases:
        # The tail keeps the last `half` characters: put its cut inside `label`.
        after = half - (len(secret) - secret.index(label)) + 3
        message = f"{filler} {secret} {filler[:after]}"
        assert label not in message[-half:] and value in message[-half:], secret
        assert value not in storable_text(message), secret
        await say(session, message)
    assert await session.flush_memory(timeout=60)
    async with db.sa_engine.connect() as conn:
        stored = (await conn.execute(text("SELECT payload::text FROM memory_jobs"))).scalars()
        episodes = (await conn.execute(text("SELECT content FROM episodes"))).scalars()
        everything = " ".join([*stored, *episodes])
    assert "[redacted]" in everything
    for _, _, value in cases:
        assert value not in everything
    await session.aclose()


async def test_a_password_said_in_another_language_reaches_no_row(
    make_session: Callable[..., Mem01Session], memories: MemoryFactory, db: Database
) -> None:
    """The screen knew English labels only: "我的新密码是..." was stored as said."""
    said = {
        "我的新密码是Tr0ub4dor3，请记住。": "Tr0ub4dor3",
        "Mi contraseña es Sommer2024!": "Sommer2024",
        "Mein Passwort ist Kx9mQ2zw": "Kx9mQ2zw",
    }
    session = rules_session(make_session, memories, "pw", "paula")
    for text_in in said:
        await say(session, text_in)
    assert await session.flush_memory(timeout=60)
    async with db.sa_engine.connect() as conn:
        rows = [
            *(await conn.execute(text("SELECT payload::text FROM memory_jobs"))).scalars(),
            *(await conn.execute(text("SELECT content FROM episodes"))).scalars(),
            *(await conn.execute(text("SELECT content FROM beliefs"))).scalars(),
        ]
    stored = " ".join(rows)
    assert "请记住" in stored and "[redacted]" in stored
    assert not any(secret in stored for secret in said.values())
    await session.aclose()


def test_the_docs_state_the_cap_the_code_applies() -> None:
    readme = (Path(__file__).parents[2] / "docs" / "concepts.md").read_text(encoding="utf-8")
    assert f"its first and last {MAX_MESSAGE_CHARS // 2:,} characters" in readme


async def test_a_turn_the_database_refuses_is_recorded_as_failed_and_blocks_nothing(
    make_session: Callable[..., Mem01Session],
    memories: MemoryFactory,
    engine: BeliefEngine,
    db: Database,
) -> None:
    # A real refusal from PostgreSQL (not a connection failure): a trigger that rejects one
    # kind of content, as a constraint or an extension might.
    async with db.sa_engine.begin() as conn:
        await conn.execute(
            text(
                "CREATE FUNCTION refuse_poison() RETURNS trigger LANGUAGE plpgsql AS $$ "
                "BEGIN IF NEW.payload::text LIKE '%poison%' THEN "
                "RAISE EXCEPTION 'poisoned payload' USING ERRCODE = '22023'; END IF; "
                "RETURN NEW; END $$"
            )
        )
        await conn.execute(
            text(
                "CREATE TRIGGER refuse_poison BEFORE INSERT ON memory_jobs "
                "FOR EACH ROW EXECUTE FUNCTION refuse_poison()"
            )
        )
    session = rules_session(make_session, memories, "refused", "rita")
    await say(session, "I like poison ivy.")
    assert session.last_memory_error is not None and "poisoned payload" in session.last_memory_error
    await say(session, "I live in Porto.")
    await say(session, "I like chess.")
    assert not await session.flush_memory(timeout=30)  # one accepted turn ended failed
    assert "poisoned payload" in (session.last_memory_error or "")
    assert session_health(session).unsent_turns == 0
    assert {"Lives in Porto", "Likes chess"} <= await active(engine, "rita")
    failed = await JobStore(db).list_jobs(user_id="rita", status="failed")
    assert len(failed) == 1 and "poisoned payload" in (failed[0].last_error or "")
    assert "poison" not in json.dumps(failed[0].payload)  # recorded without its text
    assert await JobStore(db).retry(failed[0].id, now=engine.clock()) is None
    assert await session.flush_memory(timeout=30)  # nothing new failed since
    assert session.last_memory_error is None
    await session.aclose()


async def test_a_turn_that_was_only_a_secret_leaves_no_belief(
    make_session: Callable[..., Mem01Session], memories: MemoryFactory, engine: BeliefEngine
) -> None:
    session = rules_session(make_session, memories, "secret", "sid")
    await say(session, "I like the key sk-proj-Zx81Qm2Lp0Vw7Tn4Rb6Yc3Hd.")
    await say(session, "I like jazz.")
    assert await session.flush_memory(timeout=30)
    beliefs = await active(engine, "sid")
    assert beliefs == {"Likes jazz"}, beliefs
    await session.aclose()


async def test_turns_of_an_erased_user_are_not_stored_until_reinstated(
    make_session: Callable[..., Mem01Session],
    memories: MemoryFactory,
    engine: BeliefEngine,
    db: Database,
) -> None:
    await engine.apply("eve", [Op.add("Likes tea")], provenance=Provenance(extractor="seed"))
    await engine.erase_user("eve")  # the operator's erase: a tombstone refuses new writes
    session = rules_session(make_session, memories, "after", "eve")
    await say(session, "I live in Quito with my secret diary.")
    assert session.last_memory_error is not None and "erased" in session.last_memory_error
    assert not await session.flush_memory(timeout=30)
    async with db.sa_engine.connect() as conn:
        rows = (
            await conn.execute(text("SELECT payload FROM memory_jobs WHERE user_id = 'eve'"))
        ).all()
    assert rows == []  # not stored at all, not even as a failure

    await engine.reinstate_user("eve")
    await say(session, "I live in Quito.")
    assert await session.flush_memory(timeout=30)
    assert session.last_memory_error is None
    assert await active(engine, "eve") == {"Lives in Quito"}
    await session.aclose()
