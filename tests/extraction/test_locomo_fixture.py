"""Real dialogue, labelled by hand (issue 24): LoCoMo conversation 26 (see fixtures/README.md).

The rule extractor must propose exactly the beliefs the fixture lists, so that any change
to it shows up here and its new beliefs are read and labelled by a person
(``python -m tests.extraction.locomo_fixture <conv-26.json>`` rebuilds the fixture and
keeps the labels of beliefs still proposed). Nearly all of them must be right; and the
secret screen must leave every turn as it was.
"""

from __future__ import annotations

import json
from itertools import pairwise
from typing import Any

import pytest

from mem01session.queue.job_records import scrub
from mem01session.secrets.scan import find_secrets, redact_secrets

from .locomo_fixture import FIXTURE, beliefs_of

RIGHT_AT_LEAST = 0.95


@pytest.fixture(scope="module")
def fixture() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(FIXTURE.read_text(encoding="utf-8"))
    return data


def test_the_fixture_is_the_whole_conversation(fixture: dict[str, Any]) -> None:
    turns = fixture["turns"]
    assert len(turns) == 419
    assert {t["speaker"] for t in turns} == set(fixture["speakers"]) == {"Caroline", "Melanie"}
    assert len({t["dia_id"] for t in turns}) == len(turns)
    assert sum("[image: " in t["text"] for t in turns) == 116
    # A reply is the other speaker's next turn; only a session's last turn has none.
    for t, after in pairwise(turns):
        if t["reply"] is not None:
            assert (after["text"], after["speaker"] != t["speaker"]) == (t["reply"], True)
    assert sum(t["reply"] is None for t in turns) == 19  # sessions


async def test_the_extractor_proposes_exactly_the_labelled_beliefs(fixture: dict[str, Any]) -> None:
    proposed = await beliefs_of(fixture["turns"])
    labelled = [
        {k: b[k] for k in ("dia_id", "speaker", "op", "key", "content")} for b in fixture["beliefs"]
    ]
    assert proposed == labelled, "the extractor changed: rebuild the fixture and label what is new"


def test_every_belief_is_labelled_and_nearly_all_are_right(fixture: dict[str, Any]) -> None:
    beliefs = fixture["beliefs"]
    assert beliefs
    for b in beliefs:
        assert isinstance(b["right"], bool), b
        assert b["why"] and not b["why"].startswith("UNLABELLED"), b
    right = sum(b["right"] for b in beliefs)
    assert right / len(beliefs) >= RIGHT_AT_LEAST, [b for b in beliefs if not b["right"]]


def test_the_secret_screen_leaves_every_turn_unchanged(fixture: dict[str, Any]) -> None:
    changed = []
    for t in fixture["turns"]:
        text = t["text"]
        if find_secrets(text) or redact_secrets(text) != (text, []) or scrub(text) != text:
            changed.append((t["dia_id"], text))
    assert changed == []
