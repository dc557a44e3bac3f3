"""Small talk on the write path: kept verbatim, marked, its words not counted, and out of
recall's candidates unless the question names the days it was said."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import text

from mem01session.db import Database
from mem01session.embeddings import HashingEmbedder
from mem01session.engine import BeliefEngine, EpisodePolicy, RecallRequest, Utterance
from mem01session.engine.ops import Op, Provenance

from .conftest import TickingClock

pytestmark = pytest.mark.asyncio(loop_scope="module")

MONDAY = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
THANKS = "Thanks, that's all for today!"


@pytest.fixture
def engine(module_db: Database, embedder: HashingEmbedder, clock: TickingClock) -> BeliefEngine:
    return BeliefEngine(module_db, embedder, clock=clock)


async def tell(
    engine: BeliefEngine, user_id: str, words: str, job: int, when: datetime = MONDAY,
    ops: list[Op] | None = None,
) -> None:  # fmt: skip
    prov = Provenance(session_id="conv-1", job_id=job, observed_at=when, extractor="test")
    await engine.apply(
        user_id, ops or [], provenance=prov,
        utterances=[Utterance(0, "user", words), Utterance(1, "assistant", "Sure.")],
    )  # fmt: skip


async def marks(engine: BeliefEngine, user_id: str) -> dict[str, bool]:
    async with engine.db.sa_engine.connect() as conn:
        rows = await conn.execute(
            text("SELECT content, small_talk FROM episodes WHERE user_id = :u"), {"u": user_id}
        )
        return {str(c): bool(s) for c, s in rows}


async def counted(engine: BeliefEngine, user_id: str) -> dict[str, int]:
    async with engine.db.sa_engine.connect() as conn:
        rows = await conn.execute(
            text("SELECT lexeme, episodes FROM episode_terms WHERE user_id = :u AND episodes > 0"),
            {"u": user_id},
        )
        return {str(lexeme): int(n) for lexeme, n in rows}


async def recounted(engine: BeliefEngine, user_id: str) -> dict[str, int]:
    """The word counts as they should be: every visible episode's words but small talk's."""
    async with engine.db.sa_engine.connect() as conn:
        rows = await conn.execute(
            text(
                "SELECT w.lexeme, count(*) FROM episodes e, LATERAL unnest(tsvector_to_array("
                "to_tsvector('english', e.content || coalesce(E'\\n' || e.context, '')))) "
                "AS w(lexeme) WHERE e.user_id = :u AND e.hidden_at IS NULL "
                "AND NOT e.small_talk GROUP BY w.lexeme"
            ),
            {"u": user_id},
        )
        return {str(lexeme): int(n) for lexeme, n in rows}


async def test_small_talk_is_kept_verbatim_and_marked(engine: BeliefEngine, uid: str) -> None:
    await tell(engine, uid, THANKS, 1)
    await tell(engine, uid, "I moved to Lisbon last spring.", 2)
    assert sorted(e.content for e in await engine.episodes(uid)) == [
        "I moved to Lisbon last spring.", THANKS,
    ]  # fmt: skip
    assert await marks(engine, uid) == {THANKS: True, "I moved to Lisbon last spring.": False}


async def test_small_talk_words_are_not_counted(engine: BeliefEngine, uid: str) -> None:
    await tell(engine, uid, THANKS, 1)
    await tell(engine, uid, "Thanks to my sister I adopted a cat today.", 2)
    words = await counted(engine, uid)
    assert words["thank"] == 1 and words["cat"] == 1  # the fact's words, not the thanks
    assert words == await recounted(engine, uid)
    summary = await engine.user(uid)
    assert summary is not None and summary.episodes == 2  # both kept, both counted as said


async def test_small_talk_is_no_candidate(engine: BeliefEngine, uid: str) -> None:
    await tell(engine, uid, THANKS, 1)
    await tell(engine, uid, "Today I finished the marathon in four hours.", 2)
    result = await engine.recall(
        uid, RecallRequest("all for today, thanks", max_tokens=2000, kinds="episodes")
    )
    said = [e.episode.content for e in result.episodes]
    assert THANKS not in said and "Today I finished the marathon in four hours." in said


async def test_a_question_naming_the_day_still_finds_it(
    module_db: Database, embedder: HashingEmbedder, uid: str
) -> None:
    engine = BeliefEngine(module_db, embedder, clock=TickingClock(MONDAY + timedelta(days=5)))
    await tell(engine, uid, THANKS, 1, MONDAY)
    await tell(engine, uid, "I started a pottery class.", 2, MONDAY + timedelta(days=3))
    result = await engine.recall(
        uid, RecallRequest(f"what did I say on {MONDAY:%B} {MONDAY.day}?", kinds="episodes")
    )
    assert THANKS in [e.episode.content for e in result.episodes]


async def test_word_counts_stay_right_as_episodes_leave_recall(
    module_db: Database, embedder: HashingEmbedder, uid: str
) -> None:
    later = MONDAY + timedelta(days=40)
    engine = BeliefEngine(
        module_db, embedder, clock=TickingClock(later), episodes=EpisodePolicy(retention_days=30)
    )
    await tell(engine, uid, "Great, thanks!", 1, MONDAY)  # pruned at the next write
    await tell(engine, uid, "I ride an old bike.", 2, MONDAY)  # pruned too
    await tell(engine, uid, "Haha, awesome!", 3, later, ops=[Op.add("Laughs a lot")])
    await tell(engine, uid, "My bike is green.", 4, later)
    [belief] = await engine.history(uid)
    await engine.forget(uid, belief.id)  # hides the small talk it was drawn from
    assert await counted(engine, uid) == await recounted(engine, uid)
    assert [e.content for e in await engine.episodes(uid) if e.hidden_at is None] == [
        "My bike is green."
    ]
