"""An episode's context: the message a user's words answered, searchable beside them.

"Lisbon." means nothing alone; after "Where do you live now?" it answers a later "Where
do I live?". The end of the message before is kept with the first passage of the user's
message and indexed for full-text recall at a lower weight than the user's own words; the
passage's vector is its words' plus a share of the context's, however it was written
(a turn, a re-embedding); the quote stays the user's words alone.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import text

from mem01session.db import Database
from mem01session.embeddings import HashingEmbedder
from mem01session.engine import BeliefEngine, EpisodePolicy, RecallRequest, Utterance
from mem01session.engine.episode_candidates import CONTEXT_WEIGHT
from mem01session.engine.episodes import CONTEXT_SHARE, contextual, drafts
from mem01session.engine.lines import SHORT_QUOTE_CHARS
from mem01session.engine.ops import Op, Provenance
from mem01session.engine.parse import parse_quotes
from mem01session.engine.passages import CONTEXT_TOKENS, tail
from mem01session.tokens import default_token_counter

from .dbstate import counts

on_module_loop = pytest.mark.asyncio(loop_scope="module")

MONDAY = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


@pytest.fixture
def engine(module_db: Database, embedder: HashingEmbedder) -> BeliefEngine:
    """All tests here share one database; each works as its own user (``uid``)."""
    return BeliefEngine(module_db, embedder)


async def answer(
    engine: BeliefEngine, user_id: str, words: str, after: str | None, job: int
) -> None:
    prov = Provenance(session_id="conv-1", job_id=job, observed_at=MONDAY, extractor="test")
    turn = [Utterance(0, "user", words, context=after), Utterance(1, "assistant", "Noted.")]
    await engine.apply(user_id, [], provenance=prov, utterances=turn)


async def text_matches(engine: BeliefEngine, user_id: str, query: str) -> dict[str, float]:
    result = await engine.recall(user_id, RecallRequest(query, kinds="episodes", explain=True))
    return {e.episode.content: e.signals["text"] for e in result.episodes if e.signals["text_rank"]}


def test_the_context_kept_is_the_end_of_the_message_before() -> None:
    counter = default_token_counter()
    long = "I read about many cities this morning and their weather. " * 8
    kept = tail(long + "Where do you live now?", counter)
    assert kept.endswith("Where do you live now?") and counter.count(kept) <= CONTEXT_TOKENS
    assert kept.startswith("I read")  # whole sentences only
    one_sentence = " ".join(["word"] * 200) + " and where now?"
    assert tail(one_sentence, counter).endswith("and where now?")
    assert counter.count(tail(one_sentence, counter)) <= CONTEXT_TOKENS
    assert tail("x" * 5000, counter) == "x" * len(tail("x" * 5000, counter))
    assert 0 < counter.count(tail("x" * 5000, counter)) <= CONTEXT_TOKENS
    assert tail("  ", counter) == ""


def test_only_the_first_passage_of_the_users_message_keeps_it() -> None:
    counter = default_token_counter()
    words = "Lisbon. " + "We moved there in May and the light is wonderful every day. " * 4
    rows = drafts(
        [
            Utterance(0, "user", words, context="Where do you live now?"),
            Utterance(1, "assistant", "Nice."),
        ],
        EpisodePolicy(keep="all"),
        counter,
    )
    users = [r for r in rows if r.role == "user"]
    assert len(users) > 1
    assert [r.context for r in users] == ["Where do you live now?"] + [None] * (len(users) - 1)
    assert [r.context for r in rows if r.role == "assistant"] == [None]


@on_module_loop
async def test_an_answer_is_found_by_the_question_it_answered(
    engine: BeliefEngine, uid: str
) -> None:
    await answer(engine, uid, "Lisbon, since May.", "Where do you live now?", job=1)
    await answer(engine, uid, "Pasta, always.", "What do you like to cook?", job=2)
    await answer(engine, uid, "My cat is called Pip.", None, job=3)
    result = await engine.recall(uid, RecallRequest("Where do I live?", kinds="episodes"))
    assert result.episodes[0].episode.content == "Lisbon, since May."
    # The quote is the user's words; the question is shown as what they answered.
    assert '- "Lisbon, since May." (answering "Where do you live now?")' in result.text
    [lisbon] = [e for e in await engine.episodes(uid) if e.content.startswith("Lisbon")]
    assert lisbon.context == "Where do you live now?"


@on_module_loop
async def test_the_users_own_words_count_for_more_than_the_question_before(
    engine: BeliefEngine, uid: str
) -> None:
    await answer(engine, uid, "Porto, by the river.", "Which city do you love most?", job=1)
    await answer(engine, uid, "I love Rome, the city of my youth.", "Tell me more.", job=2)
    await answer(engine, uid, "The garden is small.", "How is the flat?", job=3)
    matches = await text_matches(engine, uid, "Which city do I love?")
    assert set(matches) == {"Porto, by the river.", "I love Rome, the city of my youth."}
    assert matches["I love Rome, the city of my youth."] > matches["Porto, by the river."]


@on_module_loop
async def test_word_counts_hold_the_contexts_words_and_let_them_go(
    engine: BeliefEngine, uid: str
) -> None:
    await answer(engine, uid, "Lisbon.", "Where do you live now?", job=1)
    prov = Provenance(session_id="conv-1", job_id=2, observed_at=MONDAY, extractor="test")
    turn = [Utterance(0, "user", "Lisbon too, actually.", context="And your brother?")]
    await engine.apply(uid, [Op.add("Brother lives in Lisbon")], provenance=prov, utterances=turn)
    terms = await _terms(engine, uid)
    assert terms["live"] == 1 and terms["brother"] == 1 and terms["lisbon"] == 2
    [belief] = await engine.history(uid)
    await engine.forget(uid, belief.id)  # its episode leaves recall, context and all
    terms = await _terms(engine, uid)
    assert terms["brother"] == 0 and terms["lisbon"] == 1 and terms["live"] == 1
    assert (await counts(engine, uid))["episodes"] == 2  # hidden, not deleted
    summary = await engine.user(uid)
    assert summary is not None and summary.episodes == 1


async def _terms(engine: BeliefEngine, user_id: str) -> dict[str, int]:
    async with engine.db.sa_engine.connect() as conn:
        rows = await conn.execute(
            text("SELECT lexeme, episodes FROM episode_terms WHERE user_id = :u"), {"u": user_id}
        )
        return {str(r[0]): int(r[1]) for r in rows}


def test_the_docs_state_what_the_code_keeps_and_weighs() -> None:
    doc = Path(__file__).parents[2] / "docs" / "concepts.md"
    readme = " ".join(doc.read_text("utf-8").split())
    assert f"up to {CONTEXT_TOKENS} tokens" in readme
    assert CONTEXT_WEIGHT == 0.75 and readme.count("counts for three quarters") == 1
    assert "each counting for three quarters of one the user said" in readme
    assert CONTEXT_SHARE == 0.5 and "its vector is its words' plus half of its context's" in readme
    assert f"one of at most {SHORT_QUOTE_CHARS} characters, which alone says nothing" in readme


@on_module_loop
async def test_a_short_quote_shows_the_question_it_answered(engine: BeliefEngine, uid: str) -> None:
    await answer(engine, uid, "Two.", "Lovely photo! How many kids do you have?", job=1)
    await answer(engine, uid, "Yes (mostly).", "Nice. Do you cook <every> day?", job=2)
    await answer(engine, uid, "Pasta.", "That sounds fun.", job=3)  # no question before
    long = "We spent the whole weekend at the lake with the kids and it was great."
    await answer(engine, uid, long, "How was the weekend?", job=4)
    result = await engine.recall(uid, RecallRequest("kids cook weekend pasta", kinds="episodes"))
    assert '- "Two." (answering "How many kids do you have?")' in result.text
    assert '- "Yes (mostly)." (answering "Do you cook &lt;every&gt; day?")' in result.text
    assert '- "Pasta."\n' in result.text  # nothing asked: nothing shown
    assert f'- "{long}"\n' in result.text  # a longer quote says enough by itself
    quotes = {q.content: q.note for q in parse_quotes(result.text)}
    assert quotes["Two."] == 'answering "How many kids do you have?"'
    assert quotes["Yes (mostly)."] == 'answering "Do you cook <every> day?"'
    cited = await engine.recall(uid, RecallRequest("kids", kinds="episodes", provenance="brief"))
    assert '- "Two." (answering "How many kids do you have?"; in conv-1)' in cited.text


def test_a_vector_is_the_words_plus_a_share_of_what_they_answered() -> None:
    words, context = [3.0, 0.0], [0.0, 2.0]  # any length: each counts at unit length
    assert contextual(words, None) == words
    mixed = contextual(words, context)
    norm = math.hypot(1.0, CONTEXT_SHARE)
    assert mixed == pytest.approx([1.0 / norm, CONTEXT_SHARE / norm])
    assert math.hypot(*mixed) == pytest.approx(1.0)
    assert mixed[0] > mixed[1] > 0  # nearer the words than what they answered
    assert contextual(words, [0.0, 0.0]) == words  # no direction to add
    assert contextual([0.0, 0.0], context) == [0.0, 0.0]


async def _stored_vectors(engine: BeliefEngine, user_id: str) -> dict[str, list[float]]:
    async with engine.db.sa_engine.connect() as conn:
        rows = await conn.execute(
            text("SELECT content, embedding::text FROM episodes WHERE user_id = :u"),
            {"u": user_id},
        )
        return {str(r[0]): [float(x) for x in str(r[1]).strip("[]").split(",")] for r in rows}


async def _two_answers(engine: BeliefEngine, user_id: str) -> None:
    await answer(engine, user_id, "Lisbon, since May.", "Where do you live now?", job=1)
    await answer(engine, user_id, "My cat is called Pip.", None, job=2)


async def _assert_vectors_of_two_answers(engine: BeliefEngine, user_id: str) -> None:
    """The answer after a question holds a share of it; the one after nothing, its words."""
    stored = await _stored_vectors(engine, user_id)
    lisbon, question, cat = await engine.embedder.embed(
        ["Lisbon, since May.", "Where do you live now?", "My cat is called Pip."]
    )
    assert stored["Lisbon, since May."] == pytest.approx(contextual(lisbon, question), abs=1e-6)
    assert stored["Lisbon, since May."] != pytest.approx(lisbon, abs=1e-3)
    assert stored["My cat is called Pip."] == pytest.approx(cat, abs=1e-6)


@on_module_loop
async def test_a_turns_episodes_are_stored_with_the_vector_of_what_they_answered(
    engine: BeliefEngine, uid: str
) -> None:
    await _two_answers(engine, uid)
    await _assert_vectors_of_two_answers(engine, uid)


@on_module_loop
async def test_reembedding_makes_the_vectors_a_turn_would(
    engine: BeliefEngine, module_db: Database, uid: str
) -> None:
    await _two_answers(engine, uid)
    assert engine.embedder.dim != 32
    after = BeliefEngine(module_db, HashingEmbedder(32))  # the model changed
    report = await after.reembed(user_id=uid)
    assert (report.found, report.converted) == (2, 2)
    await _assert_vectors_of_two_answers(after, uid)
