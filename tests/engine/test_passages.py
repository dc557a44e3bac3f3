"""Passages: a message too long for the block is cut where a reader would cut it."""

from __future__ import annotations

import pytest

from mem01session.engine.episodes import EpisodePolicy
from mem01session.engine.passages import MAX_PASSAGES, PASSAGE_TOKENS, passages
from mem01session.errors import ConfigError
from mem01session.tokens import byte_bound_counter, default_token_counter


def test_a_long_message_is_split_into_passages_that_fit() -> None:
    counter = default_token_counter()
    sentence = "I spent the whole weekend repainting the old fence behind the house"
    body = ". ".join([sentence] * 12) + ". " + "x" * 600
    cut = passages(body, counter)
    assert len(cut) > 6 and cut[-1].startswith("x")
    assert all(0 < counter.count(p) <= PASSAGE_TOKENS for p in cut)
    assert "".join(cut).replace(" ", "") == body.replace(" ", "")  # nothing lost but spaces
    assert passages("Short one.\n\n  Two.  ", counter) == ["Short one. Two."]
    assert passages("   ", counter) == []


def test_chinese_and_japanese_sentences_end_passages_without_a_space() -> None:
    """。！？ end a sentence with no space after them: passages keep whole sentences, as
    written (they were cut mid-sentence at a token count)."""
    counter = default_token_counter()
    said = ["我住在里斯本，我是一名老师。", "你今天好吗？", "私はリスボンに住んでいます！"]
    body = "".join(said * 15)
    cut = passages(body, counter)
    assert len(cut) > 1 and "".join(cut) == body
    assert all(p.endswith(("。", "？", "！")) for p in cut)
    assert all(0 < counter.count(p) <= PASSAGE_TOKENS for p in cut)


def test_a_message_of_too_many_passages_keeps_its_first_and_last() -> None:
    """What a user says before and after a paste is kept; the middle is left out."""
    said = [f"Sentence {n} of the pasted minutes goes here." for n in range(300)]
    cut = passages(" ".join(said), default_token_counter())
    kept = " ".join(cut)
    assert len(cut) == MAX_PASSAGES
    assert kept.startswith(" ".join(said[:10])) and kept.endswith(" ".join(said[-10:]))
    assert said[150] not in kept


def test_passages_fit_with_any_counter() -> None:
    counter = byte_bound_counter()
    cut = passages("Ünïcödé wörds " * 40 + "🙂" * 30, counter)
    assert cut and all(0 < counter.count(p) <= PASSAGE_TOKENS for p in cut)


@pytest.mark.parametrize("bad", [{"keep": "some"}, {"retention_days": 0}, {"retention_days": True}])
def test_a_bad_policy_names_what_is_wrong(bad: dict[str, object]) -> None:
    with pytest.raises(ConfigError, match="episode"):
        EpisodePolicy(**bad)  # type: ignore[arg-type]
