"""The secret screen's figures in docs/reliability.md stay true: no false positive on real
dialogue, every ordinary way of saying a secret found."""

from __future__ import annotations

from bench.screen_corpus import SAID, texts

from mem01session.secrets.scan import find_secrets


def test_no_false_positive_on_real_dialogue() -> None:
    corpus = texts()
    assert len(corpus) > 800
    assert [t for t in corpus if find_secrets(t)] == []


def test_every_ordinary_way_of_saying_a_secret_is_found() -> None:
    assert [t for t in SAID if not find_secrets(t)] == []
