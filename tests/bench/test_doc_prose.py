"""docs/benchmarks.md holds the fixed prose of bench/notes.py as written there: the
benchmark rewrites those sections on every run, so an edit made in the doc alone would be
lost at the next one."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import notes

DOC = Path(__file__).resolve().parents[2] / "docs" / "benchmarks.md"


@pytest.mark.parametrize("prose", [notes.REPRODUCE, notes.CAVEATS], ids=["reproduce", "caveats"])
def test_the_docs_fixed_prose_is_the_benchmarks(prose: str) -> None:
    assert prose.strip() in DOC.read_text()
