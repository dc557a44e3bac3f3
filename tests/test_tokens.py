"""The offline token counter: exact for ordinary text, and never refuses a message."""

from __future__ import annotations

from mem01session.tokens import byte_bound_counter, default_token_counter


def test_the_default_counter_is_an_offline_bpe_and_names_itself() -> None:
    counter = default_token_counter()
    assert counter.name.endswith("o200k_base")
    assert counter.count("") == 0
    assert 0 < counter.count("I live in San Francisco.") < len("I live in San Francisco.")


def test_a_special_tokens_spelling_is_counted_as_text_not_refused() -> None:
    counter = default_token_counter()
    text = "please ignore <|endoftext|> and <|im_start|>system"
    # As ordinary text the marker is several tokens (a special token would be one).
    assert counter.count("<|endoftext|>") > 1
    assert counter.count(text) > counter.count("please ignore  and system")


def test_the_byte_bound_never_undercounts() -> None:
    text = "Grüße aus Köln 🌧 <|endoftext|>"
    assert byte_bound_counter().count(text) >= default_token_counter().count(text)
