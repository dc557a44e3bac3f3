"""Full-text matches weigh words by how rare they are among the user's own beliefs."""

from __future__ import annotations

from pathlib import Path

import pytest

from mem01session.engine import BeliefEngine, Op, Provenance, RecallRequest, Utterance
from mem01session.engine.candidates import MAX_QUERY_CHARS, MAX_QUERY_TERMS

PROV = Provenance(session_id="s1", extractor="test")
FACTS = [
    "Caroline likes hiking in the mountains",
    "Caroline works as a nurse",
    "Caroline has two cats",
    "Caroline paints landscapes",
    "Melanie lives in Oslo",
]


async def _text_matches(engine: BeliefEngine, user: str, query: str) -> dict[str, float]:
    ranked = await engine.search(user, RecallRequest(query, explain=True), limit=10)
    return {s.belief.content: s.signals["text"] for s in ranked if s.signals["text_rank"]}


async def test_a_word_in_most_of_the_users_beliefs_matches_nothing_by_itself(
    engine: BeliefEngine, uid: str
) -> None:
    await engine.apply(uid, [Op.add(f) for f in FACTS], provenance=PROV)
    matches = await _text_matches(engine, uid, "What does Caroline paint?")
    assert list(matches) == ["Caroline paints landscapes"]  # not every Caroline fact
    assert matches["Caroline paints landscapes"] == 1.0  # it covers all the query's weight
    ranked = await engine.search(uid, RecallRequest("What does Caroline paint?"), limit=1)
    assert ranked[0].belief.content == "Caroline paints landscapes"


async def test_a_match_on_rarer_words_scores_higher(engine: BeliefEngine, uid: str) -> None:
    facts = [*FACTS, "Caroline's cats are called Luna and Bella", "Melanie has a cat"]
    await engine.apply(uid, [Op.add(f) for f in facts], provenance=PROV)
    matches = await _text_matches(engine, uid, "What are the names of Melanie's cats?")
    assert 0 < matches["Melanie has a cat"] < 1.0  # "cat" is shared by three beliefs
    assert matches["Melanie lives in Oslo"] < matches["Melanie has a cat"]


async def test_word_counts_follow_the_beliefs_through_their_lifecycle(
    engine: BeliefEngine, uid: str
) -> None:
    result = await engine.apply(uid, [Op.add(f) for f in FACTS], provenance=PROV)
    paints = result.changes[3].belief_id
    # Once most beliefs stop mentioning Caroline, the name becomes a useful word again.
    for change in result.changes[:3]:
        await engine.forget(uid, change.belief_id, "no longer true")
    matches = await _text_matches(engine, uid, "What does Caroline do?")
    assert "Caroline paints landscapes" in matches
    await engine.correct(uid, paints, "Melanie paints portraits")
    assert "Caroline" not in " ".join(await _text_matches(engine, uid, "Caroline"))


# A long message: far more distinct words than the text query keeps (MAX_QUERY_TERMS),
# none of them the user's; the one that is comes last, as a question after a pasted text does.
LETTERS = ("bcdfghjklmnprstvwxz", "aeiou", "bcdfgklmnprst")
FILLER = " ".join(f"v{a}{b}{c}" for a in LETTERS[0] for b in LETTERS[1] for c in LETTERS[2])
PASTED = " ".join([FILLER] * 4)  # longer than the query the recall reads (MAX_QUERY_CHARS)


@pytest.mark.parametrize("message", [FILLER, PASTED], ids=["many words", "longer than read"])
async def test_a_long_message_keeps_the_words_the_user_said_for_the_text_query(
    engine: BeliefEngine, uid: str, message: str
) -> None:
    await engine.apply(uid, [Op.add(f) for f in FACTS], provenance=PROV)
    matches = await _text_matches(engine, uid, f"{message} What about the landscapes?")
    assert list(matches) == ["Caroline paints landscapes"]


@pytest.mark.parametrize("message", [FILLER, PASTED], ids=["many words", "longer than read"])
async def test_a_long_message_keeps_the_words_the_user_said_for_quoting_episodes(
    engine: BeliefEngine, uid: str, message: str
) -> None:
    said = Provenance(session_id="s1", extractor="test", job_id=1)
    turn = [Utterance(0, "user", "My grandmother grew apricots."), Utterance(1, "assistant", "Ok.")]
    await engine.apply(uid, [], provenance=said, utterances=turn)
    result = await engine.recall(uid, RecallRequest(f"{message} Any apricots?", explain=True))
    assert [(e.episode.content, e.signals["text_rank"] > 0) for e in result.episodes] == [
        ("My grandmother grew apricots.", True)
    ]


def test_the_docs_state_the_limits_the_code_applies() -> None:
    doc = Path(__file__).parents[2] / "docs" / "concepts.md"
    readme = " ".join(doc.read_text("utf-8").split())
    assert f"the {MAX_QUERY_TERMS} of its words the user's records hold" in readme
    half = MAX_QUERY_CHARS // 2
    assert f"past {MAX_QUERY_CHARS:,} characters its first and last {half:,}" in readme
