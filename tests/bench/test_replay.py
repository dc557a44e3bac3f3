"""The replaying model server of the end-to-end benchmark: LoCoMo's observations answered
as a capable model's extraction, to this library's real model extractor and in mem0's
format, placed from the user's words and never guessed."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx2
import pytest
from bench.locomo import Dialogue, load_dialogues, turn_instant
from bench.replay import MEM0, OURS, Observations, answer_mem0, answer_ours, read_request
from bench.replay_server import ReplayServer

from mem01session import Settings
from mem01session.extraction import Candidate, OpenAIExtractor, Turn, TurnMessage
from mem01session.extraction.openai_extractor import render_request

SAMPLE = {
    "speaker_a": "Ann",
    "speaker_b": "Bob",
    "session_1_date_time": "9:00 am on 3 March, 2024",
    "session_1": [
        {"speaker": "Ann", "dia_id": "D1:1", "text": "Thanks!"},
        {"speaker": "Bob", "dia_id": "D1:2", "text": "I adopted a beagle named Max."},
        {"speaker": "Ann", "dia_id": "D1:3", "text": "I fly kites. Red ones."},
    ],
    "session_2_date_time": "9:00 am on 5 March, 2024",
    "session_2": [
        {"speaker": "Ann", "dia_id": "D2:1", "text": "Thanks!"},
        {"speaker": "Ann", "dia_id": "D2:2", "text": "I fly kites. Red ones."},
    ],
    "session_1_observation": {
        "Ann": [["Ann flies red kites.", "D1:3"], ["Ann is grateful to Bob.", "D1:2"]],
        "Bob": [["Bob adopted a beagle named Max.", "D1:2"]],
    },
    "session_2_observation": {"Ann": [["Ann flies kites again.", "D2:2"]]},
    "qa": [],
}


@pytest.fixture
def dialogue(tmp_path: Path) -> Dialogue:
    (tmp_path / "conv-toy.json").write_text(json.dumps(SAMPLE))
    [loaded] = load_dialogues(tmp_path)
    return loaded


def test_a_turns_observations_are_those_about_its_speaker(dialogue: Dialogue) -> None:
    assert dialogue.observed == {
        "D1:3": ("Ann flies red kites.",),
        "D1:2": ("Bob adopted a beagle named Max.",),
        "D2:2": ("Ann flies kites again.",),
    }
    assert dialogue.unplaced_observations == 1  # about Ann, drawn from Bob's turn


def test_facts_are_found_from_the_users_words_and_never_guessed(dialogue: Dialogue) -> None:
    facts = Observations([dialogue]).facts
    assert facts("I adopted a beagle named Max.") == ("Bob adopted a beagle named Max.",)
    assert facts("  I adopted a beagle   named Max. ") == ("Bob adopted a beagle named Max.",)
    assert facts("Thanks!") == ()  # said twice, no fact either time: nothing to tell apart
    assert facts("I adopted a cat.") is None  # no such turn
    # Said twice with different facts: the time the request gives tells them apart.
    assert facts("I fly kites. Red ones.") is None
    first, second = dialogue.sessions
    assert facts("I fly kites. Red ones.", turn_instant(first, first.turns[2])) == (
        "Ann flies red kites.",
    )
    assert facts("I fly kites. Red ones.", turn_instant(second, second.turns[1])) == (
        "Ann flies kites again.",
    )


def ours(words: str, candidates: list[Candidate], at: datetime) -> dict[str, object]:
    turn = Turn("c", (TurnMessage("user", words), TurnMessage("assistant", "Nice.\nMore?")), at)
    user = render_request(turn, candidates, at)
    return {"messages": [{"role": "system", "content": "..."}, {"role": "user", "content": user}]}


def test_this_librarys_request_is_read_and_answered_as_its_schema_asks() -> None:
    at = datetime(2024, 3, 3, 9, tzinfo=UTC)
    kites = Candidate("b1", "Ann flies red kites", "hobby.kites", at - timedelta(days=9))
    asked = read_request(ours("I fly kites. Red ones.", [kites], at))
    assert (asked.system, asked.user_words, asked.observed) == (OURS, "I fly kites. Red ones.", at)
    assert asked.known == ("Ann flies red kites",)
    [restated, new] = json.loads(answer_ours(["Ann flies red kites.", "Ann likes red."], asked))[
        "ops"
    ]
    assert restated["content"] == "Ann flies red kites"  # the candidate's text: a confirmation
    assert new["content"] == "Ann likes red." and new["op"] == "ADD"
    assert new["evidence"] == "Red ones."  # the sentence sharing most words with the fact
    assert set(new) == {
        "op", "target", "targets", "content", "key", "confidence", "evidence", "reason",
        "valid_from",
    }  # fmt: skip


def test_mem0s_request_is_read_and_a_known_memory_left_out() -> None:
    prompt = "\n\n".join(
        [
            "## Summary\n",
            "## Last k Messages\nuser: Hi\n",
            "## Recently Extracted Memories\n[]",
            '## Existing Memories\n[{"id": "0", "text": "Ann flies red kites"}]',
            "## New Messages\nuser: I fly kites. Red ones.\nassistant: Nice.\nMore?\n",
            "## Observation Date\n2026-12-05",
        ]
    )
    body = {"messages": [{"role": "system", "content": "x"}, {"role": "user", "content": prompt}]}
    asked = read_request(body)
    assert (asked.system, asked.user_words, asked.known) == (
        MEM0,
        "I fly kites. Red ones.",
        ("Ann flies red kites",),
    )
    answer = json.loads(answer_mem0(["Ann flies red kites.", "Ann likes red."], asked))
    assert answer == {"memory": [{"id": "0", "text": "Ann likes red.", "attributed_to": "user"}]}
    assert read_request({"messages": [{"role": "user", "content": "hi"}]}).system == ""


@pytest.fixture
def server(dialogue: Dialogue) -> Iterator[ReplayServer]:
    with ReplayServer([dialogue]) as running:
        yield running


async def test_the_real_extractor_gets_the_facts_and_the_server_counts(
    server: ReplayServer, dialogue: Dialogue
) -> None:
    settings = Settings(openai_base_url=server.url, openai_api_key="bench")
    extractor = OpenAIExtractor(settings, model="replay")
    first = dialogue.sessions[0]
    try:
        for turn, expected in ((first.turns[1], ["Bob adopted a beagle named Max."]),
                               (first.turns[0], [])):  # fmt: skip
            at = turn_instant(first, turn)
            said = Turn("c", (TurnMessage("user", turn.text),), at)
            got = await extractor.extract(said, [], at)
            assert [op.content for op in got.ops] == expected
            assert got.usage["prompt_tokens"] > 0
        unknown = Turn("c", (TurnMessage("user", "I adopted a cat."),), at)
        assert (await extractor.extract(unknown, [], at)).ops == ()
    finally:
        await extractor.aclose()
    usage = server.usage[OURS]
    assert (usage.calls, usage.facts, usage.unplaced) == (3, 1, 1)
    assert usage.prompt_tokens > 3 * 500 and usage.completion_tokens > 0  # prompt and schema


def test_a_request_of_no_known_shape_is_answered_empty_and_counted(
    server: ReplayServer,
) -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": "Tell me a joke"}]}
    reply = httpx2.post(f"{server.url}/chat/completions", json=body, timeout=30).json()
    assert reply["choices"][0]["message"]["content"] == "{}"
    assert server.usage["other"].calls == 1 and server.usage["other"].unplaced == 1
