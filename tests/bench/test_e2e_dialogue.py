"""The end-to-end benchmark's pure parts, on a made-up two-speaker conversation (no server)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace

import pytest
from bench.common import replace_marked, replace_section
from bench.e2e import BUDGETS, recalled_ids
from bench.e2e_mem0 import packed
from bench.locomo import (
    NO_REPLY,
    Dialogue,
    DialogueSession,
    DialogueTurn,
    chat,
    instants,
    load_dialogues,
    raw_text,
    turn_instant,
    turn_text,
)

SAMPLE = {
    "speaker_a": "Ann",
    "speaker_b": "Bob",
    "session_1_date_time": "9:00 am on 3 March, 2024",
    "session_1": [
        {"speaker": "Ann", "dia_id": "D1:1", "text": "Morning!"},
        {"speaker": "Bob", "dia_id": "D1:2", "text": "Hi Ann."},
        {
            "speaker": "Ann",
            "dia_id": "D1:3",
            "text": "Look at my kite.",
            "blip_caption": "a red kite",
        },
        {"speaker": "Bob", "dia_id": "D1:4", "text": "Nice."},
        {"speaker": "Bob", "dia_id": "D1:5", "text": "Where did you get it?"},
        {"speaker": "Ann", "dia_id": "D1:6", "text": "A market."},
    ],
    "session_10_date_time": "2:30 pm on 5 March, 2024",
    "session_10": [
        {"speaker": "Bob", "dia_id": "D10:1", "text": "Back again."},
        {"speaker": "Ann", "dia_id": "D10:2", "text": "Hello."},
        {"speaker": "Ann", "dia_id": "D10:3", "text": "I flew the kite."},
        {"speaker": "Bob", "dia_id": "D10:4", "text": "Great."},
    ],
    "session_2": [{"speaker": "Ann", "dia_id": "D2:1", "text": "No date here."}],
    "qa": [
        {"question": "What colour is the kite?", "evidence": ["D1:3"], "category": 1},
        {"question": "Trick?", "evidence": ["D1:1"], "category": 5},
    ],
}


@pytest.fixture
def dialogue(tmp_path: Path) -> Dialogue:
    (tmp_path / "conv-toy.json").write_text(json.dumps(SAMPLE))
    [loaded] = load_dialogues(tmp_path)
    return loaded


def test_image_turns_carry_their_caption() -> None:
    assert turn_text({"text": "Look.", "blip_caption": "a cat"}) == "Look. [image: a cat]"
    assert turn_text({"text": "Plain."}) == "Plain."


def test_sessions_in_number_order_with_dates(dialogue: Dialogue) -> None:
    assert dialogue.speakers == ("Ann", "Bob")
    assert [s.number for s in dialogue.sessions] == [1, 2, 10]
    first, undated, tenth = dialogue.sessions
    assert first.date == datetime(2024, 3, 3, 9, 0, tzinfo=UTC)
    assert undated.date == first.date + timedelta(days=1)  # missing: a day after the previous
    assert tenth.date == datetime(2024, 3, 5, 14, 30, tzinfo=UTC)
    assert first.turns[2].text == "Look at my kite. [image: a red kite]"
    assert [(q.evidence, text) for q, text in dialogue.queries] == [
        (frozenset({"D1:3"}), "What colour is the kite?")
    ]


def test_each_speaker_gets_a_chat_with_the_other_as_the_replies(dialogue: Dialogue) -> None:
    first = dialogue.sessions[0]
    ann = [(e.turn.dia_id, e.reply) for e in chat(first, "Ann")]
    assert ann == [
        ("D1:1", "Hi Ann."),
        ("D1:3", "Nice.\nWhere did you get it?"),  # the other speaker's turns, joined
        ("D1:6", NO_REPLY),  # the session ends unanswered
    ]
    bob = [(e.turn.dia_id, e.reply) for e in chat(first, "Bob")]
    assert bob == [
        ("D1:2", "Look at my kite. [image: a red kite]"),
        ("D1:4", NO_REPLY),  # Bob speaks again before Ann answers
        ("D1:5", "A market."),
    ]
    # Ann's turn before Bob's first one is not part of Bob's chat: every turn is a user
    # message exactly once.
    tenth = dialogue.sessions[2]
    assert [(e.turn.dia_id, e.reply) for e in chat(tenth, "Bob")] == [
        ("D10:1", "Hello.\nI flew the kite."),
        ("D10:4", NO_REPLY),
    ]
    assert [(e.turn.dia_id, e.reply) for e in chat(tenth, "Ann")] == [
        ("D10:2", NO_REPLY),
        ("D10:3", "Great."),
    ]
    said = sorted(
        e.turn.dia_id for s in dialogue.sessions for sp in dialogue.speakers for e in chat(s, sp)
    )
    assert said == sorted(t.dia_id for s in dialogue.sessions for t in s.turns)


def test_every_turn_has_its_own_instant_naming_it(dialogue: Dialogue) -> None:
    turns = instants(dialogue)
    assert len(turns) == sum(len(s.turns) for s in dialogue.sessions)
    first = dialogue.sessions[0]
    assert turn_instant(first, first.turns[3]) == first.date + timedelta(seconds=3)
    assert turns[(dialogue.user_id("Bob"), first.date + timedelta(seconds=3))] == "D1:4"
    assert (dialogue.user_id("Ann"), first.date + timedelta(seconds=3)) not in turns
    assert dialogue.user_id("Ann") != dialogue.user_id("Bob")
    assert dialogue.chat_id(first, "Ann") != dialogue.chat_id(dialogue.sessions[2], "Ann")


def test_two_turns_of_one_user_at_one_instant_are_refused() -> None:
    when = datetime(2024, 1, 1, tzinfo=UTC)
    twice = DialogueSession(1, when, (DialogueTurn("Ann", "D1:1", "a", 0),))
    again = DialogueSession(2, when, (DialogueTurn("Ann", "D2:1", "b", 0),))
    with pytest.raises(ValueError, match="share an instant"):
        instants(Dialogue("x", ("Ann", "Bob"), (twice, again), []))


def test_raw_text_is_dated_and_names_the_speaker(dialogue: Dialogue) -> None:
    first = dialogue.sessions[0]
    assert raw_text(first, first.turns[1]) == "[3 March 2024] Bob: Hi Ann."


def test_a_new_section_goes_before_the_named_one() -> None:
    doc = "# T\n\n## A\n\na\n\n## How to reproduce\n\nr\n"
    out = replace_section(doc, "New", "## New\n\nn\n", before="How to reproduce")
    assert out == "# T\n\n## A\n\na\n\n## New\n\nn\n\n## How to reproduce\n\nr\n"
    assert replace_section(out, "New", "## New\n\nm\n") == out.replace("\nn\n", "\nm\n")


def test_recalled_items_name_their_turns_beliefs_and_episodes() -> None:
    when = datetime(2024, 1, 1, tzinfo=UTC)
    turns = {("u", when): "D1:1", ("u", when + timedelta(seconds=1)): "D1:2"}
    belief = SimpleNamespace(belief=SimpleNamespace(id=7))
    episode = SimpleNamespace(episode=SimpleNamespace(said_at=when + timedelta(seconds=1)))
    stranger = SimpleNamespace(episode=SimpleNamespace(said_at=when + timedelta(days=1)))
    result = SimpleNamespace(beliefs=(belief,), episodes=(episode, stranger))
    got = recalled_ids(result, "u", {7: frozenset({"D1:1"})}, turns)  # type: ignore[arg-type]
    assert got == [frozenset({"D1:1"}), frozenset({"D1:2"}), frozenset()]


def test_a_ranked_list_is_packed_into_each_budget() -> None:
    items = [(f"turn {i} " + "word " * 30, frozenset({f"D1:{i}"})) for i in range(100)]
    blocks = packed(items)
    assert set(blocks) == set(BUDGETS)
    sizes = [len(blocks[b].block) for b in BUDGETS]
    assert 0 < sizes[0] < sizes[1] < sizes[2]
    assert all(0 < blocks[b].block_tokens <= b for b in BUDGETS)
    assert blocks[BUDGETS[0]].block[0] == frozenset({"D1:0"})  # rank order kept


def test_marked_text_is_replaced_between_its_markers_only() -> None:
    doc = "a <!-- bench:x -->old<!-- /bench:x --> b <!-- bench:y -->keep"
    assert replace_marked(doc, {"x": "new", "z": "none"}) == (
        "a <!-- bench:x -->new<!-- /bench:x --> b <!-- bench:y -->keep"
    )
    assert replace_marked(doc, {"y": "unclosed"}) == doc
