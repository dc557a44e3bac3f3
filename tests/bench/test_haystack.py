"""The haystack benchmark's parts: the scripts read from a made-up package tarball, the
older messages made of them, their vectors kept between runs (no network); where the
evidence ranks among a user's messages (on the test server)."""

from __future__ import annotations

import io
import itertools
import json
import tarfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
import pytest
from bench.common import PrecomputedEmbedder, vector_text
from bench.episode_scale import Said, copy_said
from bench.haystack import (
    BUDGET,
    JOB_IDS,
    PACKAGE,
    PER_DAY,
    VERSION,
    CorpusError,
    Haystack,
    Line,
    Run,
    haystack,
    losses,
    rank_said,
    read_lines,
    summary,
    tarball,
    vectors,
)

from mem01session.embeddings import HashingEmbedder, Vector
from tests.conftest import TEST_DIM

UNTIL = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)


def _package(episodes: dict[str, object]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, body in {"package/README.md": "# x", **episodes}.items():
            data = (body if isinstance(body, str) else json.dumps(body)).encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def _spoken(character: str, line: str) -> dict[str, str]:
    return {"character": character, "line": line}


def test_lines_come_in_episode_order_without_stage_directions() -> None:
    second = {"scenes": [[_spoken("Pam", "Later.")]]}
    first = {
        "scenes": [
            [
                _spoken("Jim", "So [looks at camera]   the  stapler?"),
                _spoken("Dwight", "[sighs]"),
                _spoken("Dwight", "It is mine."),
                _spoken("Dwight", "Mine alone."),
            ],
            [_spoken("Pam", "New scene.")],
        ],
        "deleted_scenes": [[_spoken("Kevin", "Cut.")]],
    }
    data = _package({"package/lib/S01E02.json": second, "package/lib/S01E01.json": first})
    assert read_lines(data) == [
        Line("So the stapler?", None),  # a scene's first line answers nothing
        # "[sighs]" alone says nothing: dropped, and the line before it is Jim's
        Line("It is mine.", "So the stapler?"),
        Line("Mine alone.", None),  # the same character going on answers nothing
        Line("New scene.", None),
        Line("Cut.", None),  # deleted scenes too
        Line("Later.", None),
    ]


def test_a_tarball_without_the_episodes_is_refused() -> None:
    with pytest.raises(CorpusError, match=r"no package/lib/SxxEyy\.json"):
        read_lines(_package({"package/index.js": "module.exports = []"}))


def test_a_kept_tarball_that_is_not_the_published_one_is_refused(tmp_path: Path) -> None:
    kept = tmp_path / f"{PACKAGE}-{VERSION}.tgz"
    kept.write_bytes(b"not the package")
    with pytest.raises(CorpusError, match=r"SHA-1 [0-9a-f]{40}, not "):
        tarball(tmp_path)
    assert kept.read_bytes() == b"not the package"  # refused, left as it was


def test_older_messages_end_the_day_before_and_come_thirty_a_day() -> None:
    lines = [Line(f"Line number {n}.", f"Before {n}." if n % 2 else None) for n in range(7)]
    said = haystack(lines, "u", 10, start=5, until=UNTIL)
    assert [s.content for s in said] == [f"Line number {(5 + n) % 7}." for n in range(10)]
    assert said[0].context == "Before 5." and said[1].context is None
    assert said[-1].said_at == UNTIL - timedelta(days=1)
    assert [b.said_at - a.said_at for a, b in itertools.pairwise(said)] == [
        timedelta(days=1 / PER_DAY)
    ] * 9
    assert [s.job_id for s in said] == [JOB_IDS + n for n in range(10)]
    assert {s.user for s in said} == {"u"} and {s.passage for s in said} == {0}
    assert said[-1].session_id == "older-2023-05-07"


def test_a_long_line_is_stored_as_the_write_path_splits_it() -> None:
    long = " ".join(
        f"Sentence {n} goes on about the paper company and its sales." for n in range(60)
    )
    said = haystack([Line(long, "What happened?")], "u", 1, start=0, until=UNTIL)
    assert len(said) > 1
    assert [s.passage for s in said] == list(range(len(said)))
    assert said[0].context == "What happened?" and all(s.context is None for s in said[1:])
    assert {s.job_id for s in said} == {JOB_IDS}


def test_no_lines_make_no_haystack() -> None:
    with pytest.raises(CorpusError, match="no lines"):
        haystack([], "u", 3, start=0, until=UNTIL)


class _Counting(HashingEmbedder):
    def __init__(self) -> None:
        super().__init__(8)
        self.computed: list[str] = []

    def embed_one(self, text: str) -> Vector:
        self.computed.append(text)
        return super().embed_one(text)


def test_the_lines_vectors_are_kept_for_the_next_run(tmp_path: Path) -> None:
    first = _Counting()
    vectors(PrecomputedEmbedder(first), ["a b", "c d", "a b"], tmp_path)
    assert first.computed == ["a b", "c d"]
    again = _Counting()
    emb = PrecomputedEmbedder(again)
    vectors(emb, ["c d", "e f"], tmp_path)
    assert again.computed == ["e f"]  # only what was not kept
    assert emb.cache["c d"] == pytest.approx(first.embed_one("c d"), abs=1e-6)
    third = _Counting()
    vectors(PrecomputedEmbedder(third), ["e f", "a b", "c d"], tmp_path)
    assert third.computed == []  # every vector computed before is kept


def test_the_quoted_line_names_the_largest_haystack_against_none() -> None:
    r = Haystack()
    r.runs = {
        0: Run(in_block={BUDGET: 0.907}),
        10_000: Run(in_block={BUDGET: 0.74}),
        100_000: Run(in_block={BUDGET: 0.633}),
    }
    line = summary(r, "benchmarks.md")
    assert "Among 100,000 older messages per user" in line
    assert f"in the {BUDGET}-token block for 63% of them, against 91% with none" in line
    assert "(benchmarks.md#recall-among-a-lifetime-of-older-messages-locomo)" in line


def test_the_evidence_rank_counts_the_users_nearer_messages(db_url: str) -> None:
    emb = PrecomputedEmbedder(HashingEmbedder(TEST_DIM))
    lines = ["my sister paints lakes", "we ate pasta at noon", "the printer jammed again"]
    said = [
        Said("u", "older", n, 0, text, None, UNTIL + timedelta(minutes=n))
        for n, text in enumerate(lines)
    ]
    said.append(Said("v", "older", 9, 0, lines[1], None, UNTIL))  # another user's
    copy_said(db_url, emb, said)
    question = emb.inner.embed_one("my sister paints lakes")
    with psycopg.connect(db_url) as conn:
        assert rank_said(conn, "u", vector_text(question), UNTIL) == 1
        nearer = sorted(lines, key=lambda t: _distance(question, emb.cache[t]))
        at = UNTIL + timedelta(minutes=1)
        assert rank_said(conn, "u", vector_text(question), at) == nearer.index(lines[1]) + 1
        assert rank_said(conn, "u", vector_text(question), UNTIL - timedelta(days=1)) is None
        assert rank_said(conn, "v", vector_text(question), UNTIL) == 1  # its only message


def _distance(a: Vector, b: Vector) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norm = sum(x * x for x in a) ** 0.5 * sum(y * y for y in b) ** 0.5
    return 1.0 - dot / norm


def test_the_losses_table_follows_the_questions_the_older_messages_cost() -> None:
    r = Haystack()
    r.runs = {
        0: Run(found=[True, True, True, False], ranks=[3, 10, 1, None]),
        100_000: Run(
            found=[False, True, False, False], ranks=[900, 40, 2_000, None], overlap=0.9051
        ),
    }
    table = losses(r)
    # questions 1 and 3 were lost; their ranks went from 3 and 1 to 900 and 2,000
    assert "| 100,000 | 2 | 2 → 1,450 | 2 | 0.905 |" in table
    assert f"the vector list's pool at {BUDGET} tokens" in table
    assert losses(Haystack()) == ""
