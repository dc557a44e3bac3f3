"""The scrub benchmark's inputs and its section of docs/reliability.md."""

from __future__ import annotations

from pathlib import Path

from bench.scrub import INPUTS, SIZES, WORST, Row, english, section, write

from mem01session.secrets.scan import find_secrets


def test_inputs_have_their_size_and_the_english_holds_no_secret() -> None:
    for make in (*INPUTS.values(), *WORST.values()):
        assert len(make(10_000)) == 10_000
    assert find_secrets(english(SIZES[1])) == []


def test_the_section_is_replaced_in_place_before_the_soak_figures(tmp_path: Path) -> None:
    doc = tmp_path / "reliability.md"
    doc.write_text("# Reliability\n\nintro\n\n## Soak figures\n\nsoak\n")
    rows = [Row("English text", 10_000, 0.0002, before=0.05), Row("hex", 10_000, 0.0003)]
    write(doc, section(rows, "python -m bench.scrub", 3, "abc123", 30.0, 0.5))
    first = doc.read_text()
    assert first.index("## Scrubbing speed") < first.index("## Soak figures")
    assert "| English text | 10 KB | 0.2 | 20.0 | 50.0 |" in first
    write(doc, section(rows[:1], "python -m bench.scrub --runs 3", 3, None, 30.0, 0.5))
    second = doc.read_text()
    assert second.count("## Scrubbing speed") == 1 and "--runs 3" in second
    assert second.endswith("## Soak figures\n\nsoak\n") and "intro" in second
