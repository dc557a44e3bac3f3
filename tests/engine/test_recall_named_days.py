"""Recall when the question names days: what was said then comes first.

"Where did I go camping in June?" asks about June: the episodes said in the days a question
names are fetched as a third list (by similarity) beside the vector and full-text ones,
and rank above words as relevant said on other days.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from mem01session.db import Database
from mem01session.embeddings import HashingEmbedder
from mem01session.engine import BeliefEngine, RecallRequest, Utterance, episode_candidates
from mem01session.engine.ops import Op, Provenance

pytestmark = pytest.mark.asyncio(loop_scope="module")

JUNE = datetime(2023, 6, 10, 9, 0, tzinfo=UTC)
AUGUST = datetime(2023, 8, 5, 9, 0, tzinfo=UTC)
LATER = datetime(2023, 11, 2, 12, 0, tzinfo=UTC)


@pytest.fixture
def engine(module_db: Database, embedder: HashingEmbedder) -> BeliefEngine:
    """All tests here share one database; each works as its own user (``uid``)."""
    return BeliefEngine(module_db, embedder, clock=lambda: LATER)


async def tell(
    engine: BeliefEngine,
    user_id: str,
    words: str,
    job: int,
    when: datetime,
    ops: tuple[Op, ...] = (),
) -> None:
    prov = Provenance(session_id="conv-1", job_id=job, observed_at=when, extractor="test")
    turn = [Utterance(0, "user", words), Utterance(1, "assistant", "I see.")]
    await engine.apply(user_id, list(ops), provenance=prov, utterances=turn)


async def quotes(engine: BeliefEngine, user_id: str, query: str, **kw: object) -> list[str]:
    result = await engine.recall(user_id, RecallRequest(query, kinds="episodes", **kw))  # type: ignore[arg-type]
    return [e.episode.content for e in result.episodes]


LAKE = "Our tent stood by the lake."
MOUNTAINS = "We went camping in the mountains."


async def camping(engine: BeliefEngine, user_id: str) -> None:
    await tell(engine, user_id, LAKE, 1, JUNE)
    await tell(engine, user_id, MOUNTAINS, 2, AUGUST)


async def day_ranks(
    engine: BeliefEngine, user_id: str, query: str, **kw: object
) -> dict[str, float]:
    request = RecallRequest(query, kinds="episodes", explain=True, **kw)  # type: ignore[arg-type]
    result = await engine.recall(user_id, request)
    return {e.episode.content: e.signals["day_rank"] for e in result.episodes}


async def test_words_said_in_the_month_named_come_first(engine: BeliefEngine, uid: str) -> None:
    await camping(engine, uid)
    assert (await quotes(engine, uid, "Where did we go camping?"))[0] == MOUNTAINS  # control
    assert (await quotes(engine, uid, "Where did we go camping in June?"))[0] == LAKE
    assert (await quotes(engine, uid, "Where did we go camping in August 2023?"))[0] == MOUNTAINS


async def test_words_said_in_the_season_or_holiday_named_come_first(
    engine: BeliefEngine, uid: str
) -> None:
    await camping(engine, uid)
    christmas = "We went camping with my cousins in the snow."
    await tell(engine, uid, christmas, 3, datetime(2022, 12, 25, 10, 0, tzinfo=UTC))
    assert (await quotes(engine, uid, "Where did we go camping?"))[0] == MOUNTAINS  # control
    assert (await quotes(engine, uid, "Where did we go camping at Christmas?"))[0] == christmas
    assert (await quotes(engine, uid, "Where did we go camping last winter?"))[0] == christmas
    summer = await quotes(engine, uid, "Where did we go camping over the summer?")
    assert summer[0] in (LAKE, MOUNTAINS) and christmas not in summer[:2]


async def test_the_days_rank_shows_in_the_explanation(engine: BeliefEngine, uid: str) -> None:
    await camping(engine, uid)
    assert await day_ranks(engine, uid, "camping on June 10, 2023") == {LAKE: 1.0, MOUNTAINS: 0.0}
    assert await day_ranks(engine, uid, "camping") == {LAKE: 0.0, MOUNTAINS: 0.0}
    # Told, not asked: "on June 10" is when the user went, not what they want back.
    told = await day_ranks(engine, uid, "I went camping on June 10, 2023.")
    assert told == {LAKE: 0.0, MOUNTAINS: 0.0}


async def test_words_said_that_day_come_back_though_nothing_else_matches(
    engine: BeliefEngine, uid: str
) -> None:
    for job in range(1, 41):  # more than the vector and text lists hold for a small block
        await tell(engine, uid, f"Note {job}: the weather was grey.", job, AUGUST)
    await tell(engine, uid, "Bought new boots.", 99, JUNE)
    assert "Bought new boots." not in await quotes(engine, uid, "weather", max_tokens=60)
    named = await quotes(engine, uid, "What did I say about the weather on June 10?", max_tokens=60)
    assert named[0] == "Bought new boots."


async def test_a_lifetime_of_words_still_gives_those_of_the_days_named(
    engine: BeliefEngine, uid: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """For a user with a lifetime of episodes, the days' episodes are found by the bits of
    their vectors, read as one range of the time said: what was said then comes first."""
    for job in range(1, 41):
        await tell(engine, uid, f"Note {job}: the weather was grey.", job, AUGUST)
    boots, coats = "Bought new boots.", "The shop sold out of raincoats."
    await tell(engine, uid, boots, 99, JUNE)
    await tell(engine, uid, coats, 100, JUNE + timedelta(hours=2))
    monkeypatch.setattr(episode_candidates, "EXACT_UP_TO", 10)  # 42 episodes: a lifetime
    named = await quotes(engine, uid, "What did I say about the weather on June 10?", max_tokens=60)
    assert set(named[:2]) == {boots, coats}
    ranks = await day_ranks(engine, uid, "the weather on June 10, 2023")
    assert ranks[boots] > 0 and ranks[coats] > 0
    assert all(rank == 0.0 for said, rank in ranks.items() if said not in (boots, coats))


async def test_relative_days_count_from_the_reads_moment(engine: BeliefEngine, uid: str) -> None:
    await camping(engine, uid)
    last_week = await day_ranks(engine, uid, "What did we do in the last week?")
    assert last_week and set(last_week.values()) == {0.0}  # now is November
    # What was said then has a day rank; the rest none (or is not quoted: no word of the
    # question, little like it).
    then = AUGUST + timedelta(days=1)
    yesterday = await day_ranks(engine, uid, "What did we do yesterday?", as_of=then)
    assert yesterday[MOUNTAINS] == 1.0 and yesterday.get(LAKE, 0.0) == 0.0
    in_september = AUGUST + timedelta(days=30)
    month = await day_ranks(engine, uid, "What did we do last month?", as_of=in_september)
    assert month[MOUNTAINS] == 1.0 and month.get(LAKE, 0.0) == 0.0


async def test_the_days_of_the_users_zone(engine: BeliefEngine, uid: str) -> None:
    late = datetime(2023, 6, 10, 23, 30, tzinfo=UTC)  # 11 June, 08:30 in Tokyo
    await tell(engine, uid, "Camping near Tokyo.", 1, late)
    await tell(engine, uid, "Camping at home.", 2, JUNE)  # 10 June in both zones

    async def said_that_day(query: str, zone: str | None) -> set[str]:
        ranks = await day_ranks(engine, uid, query, timezone=zone)
        return {content for content, rank in ranks.items() if rank}

    assert await said_that_day("camping on June 11", "Asia/Tokyo") == {"Camping near Tokyo."}
    assert await said_that_day("camping on June 11", None) == set()
    assert await said_that_day("camping on June 10", None) == {
        "Camping near Tokyo.",
        "Camping at home.",
    }


async def test_forgotten_words_and_other_users_stay_out(engine: BeliefEngine, uid: str) -> None:
    await tell(engine, uid, "I am allergic to peanuts.", 1, JUNE, (Op.add("Is allergic"),))
    await tell(engine, f"{uid}-other", "My sister's peanut farm.", 2, JUNE)
    [belief] = await engine.history(uid)
    await engine.forget(uid, belief.id)
    assert await quotes(engine, uid, "What did I say on June 10, 2023?") == []


async def test_a_question_about_past_days_reads_the_beliefs_that_held_then(
    engine: BeliefEngine, uid: str
) -> None:
    monday = datetime(2023, 10, 30, 9, 0, tzinfo=UTC)  # LATER is Thursday 2 November
    wednesday = monday + timedelta(days=2)
    moved = await engine.apply(
        uid,
        [Op.add("Lives in New York City", key="home.city")],
        provenance=Provenance(session_id="mon", job_id=1, observed_at=monday, extractor="test"),
    )
    await engine.apply(
        uid,
        [Op.supersede(moved.changes[0].belief_id, "Lives in San Francisco")],
        provenance=Provenance(session_id="wed", job_id=2, observed_at=wednesday, extractor="t"),
    )

    async def block(query: str) -> str:
        return (await engine.recall(uid, RecallRequest(query, kinds="beliefs"))).text

    assert "New York" not in await block("Where do I live?")
    then = await block("Where did I live on Monday?")
    # What held on Monday first; what holds now after it, dated: said on Wednesday.
    past, current = "- Lives in New York City (until 1 Nov 2023)", "- Lives in San Francisco"
    assert then.index(past) < then.index(current)
    assert f"{current} (1 Nov 2023)" in then
    since = await block("Where did I live yesterday?")  # Wednesday: both held that day
    assert "- Lives in San Francisco (1 Nov 2023)" in since
    assert "New York" not in await block("I lived somewhere else on Monday.")  # told


async def test_the_words_naming_the_days_are_not_matched_as_words(
    engine: BeliefEngine, uid: str
) -> None:
    """ "yesterday" in a question names a day; as a word to match it would find whatever
    mentions yesterday, said on any day."""
    await tell(engine, uid, "I lost my job yesterday, a bad week.", 1, JUNE)
    await tell(engine, uid, "We hiked the ridge and saw two eagles.", 2, LATER - timedelta(days=1))
    request = RecallRequest("What did I do yesterday?", kinds="episodes", explain=True)
    result = await engine.recall(uid, request)
    signals = {e.episode.content: e.signals for e in result.episodes}
    assert signals["I lost my job yesterday, a bad week."]["text_rank"] == 0.0
    assert result.episodes[0].episode.content == "We hiked the ridge and saw two eagles."
    # Told, not asked, it names no day: the same word is matched as any other.
    told = await engine.recall(uid, RecallRequest("I keep thinking of yesterday", explain=True))
    ranks = {e.episode.content: e.signals["text_rank"] for e in told.episodes}
    assert ranks["I lost my job yesterday, a bad week."] == 1.0
