"""The benchmark's retrieval metrics and LoCoMo loader, on a toy dataset (no server)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from bench.locomo import load, parse_date
from bench.metrics import Answer, Query, pack, parse_ids, recall_any_at, summarize


def ids(*values: str) -> frozenset[str]:
    return frozenset(values)


def test_parse_ids_accepts_strings_lists_and_separators() -> None:
    assert parse_ids("D1:3") == ids("D1:3")
    assert parse_ids("D1:3; D2:5,D3:1") == ids("D1:3", "D2:5", "D3:1")
    assert parse_ids(["D1:3", ["D1:4"]]) == ids("D1:3", "D1:4")
    assert parse_ids(None) == frozenset()


def test_recall_any_at_k_counts_only_the_first_k() -> None:
    answer = Answer(ranked=[ids("D1:1"), ids("D1:2"), ids("D9:9")])
    assert recall_any_at(answer, ids("D9:9"), 3)
    assert not recall_any_at(answer, ids("D9:9"), 2)
    assert not recall_any_at(answer, ids("D7:7"), 10)


def test_summarize_toy_dataset() -> None:
    queries = [
        Query("q1", ids("D1:1"), 1),
        Query("q2", ids("D2:2"), 2),
        Query("q3", ids("D3:3", "D3:4"), 2),
        Query("q4", frozenset(), 4),  # no evidence: not scored
    ]
    far = [ids(f"X{i}") for i in range(7)]
    answers = [
        Answer(ranked=[ids("D1:1")], block=[ids("D1:1")], block_tokens=100),
        Answer(ranked=[*far, ids("D2:2")], block=[far[0]], block_tokens=300),
        Answer(ranked=[ids("Y")], block=[], block_tokens=0),
        Answer(ranked=[ids("D1:1")], block=[ids("D1:1")], block_tokens=999),
    ]
    s = summarize(queries, answers)
    assert s.queries == 3
    assert s.at5 == pytest.approx(1 / 3)
    assert s.at10 == pytest.approx(2 / 3)
    assert s.in_block == pytest.approx(1 / 3)
    assert s.mean_tokens == pytest.approx(400 / 3)
    assert s.by_category == {1: 1.0, 2: 0.0}


def test_summarize_requires_one_answer_per_query() -> None:
    with pytest.raises(ValueError):
        summarize([Query("q", ids("a"))], [])


def test_pack_stops_at_the_budget() -> None:
    words = len  # one token per character: easy to reason about
    taken = pack(["aaaa", "bbbb", "cc"], words, budget=14, header="H\n")
    # "H\n" (2) + "- aaaa\n" (7) = 9; + "- bbbb\n" = 16 > 14: stop at the first misfit.
    assert taken == [0]
    assert pack(["x"], words, budget=1) == []


def test_locomo_loader_toy_file(tmp_path: Path) -> None:
    sample = {
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1_observation": {
            "Ann": [["Ann adopted a cat.", "D1:3"], ["Ann likes tea.", ["D1:4", "D1:5"]]],
            "Bob": [["", "D1:6"]],
        },
        "qa": [
            {"question": "What pet?", "evidence": ["D1:3"], "category": 1},
            {"question": "Adversarial?", "evidence": ["D1:4"], "category": 5},
        ],
    }
    (tmp_path / "conv-x.json").write_text(json.dumps(sample))
    [conv] = load(tmp_path)
    assert conv.user_id == "locomo-conv-x"
    assert [f.text for f in conv.facts] == ["Ann adopted a cat.", "Ann likes tea."]
    assert conv.facts[1].dia_ids == ids("D1:4", "D1:5")
    assert conv.facts[0].observed_at == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert [(q.evidence, text) for q, text in conv.queries] == [(ids("D1:3"), "What pet?")]


def test_parse_date_rejects_garbage() -> None:
    assert parse_date("someday") is None
    assert parse_date(None) is None
