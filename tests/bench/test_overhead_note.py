"""The per-run overhead table never shows a negative added p95 without saying why."""

from __future__ import annotations

from bench.overhead import Case, OverheadResult, below_zero, table


def result(bare: list[float], mem: list[float]) -> OverheadResult:
    case = Case(0.5, 1, bare, mem)
    return OverheadResult(runs=len(bare), think=0.3, cases=[case])


def test_a_negative_added_p95_is_marked_and_explained_with_the_runs_behind_it() -> None:
    bare = [5.0] * 37 + [55.0, 60.0, 95.3]  # a pause of the machine on the bare side
    mem = [15.0] * 38 + [18.0, 19.0]
    r = result(bare, mem)
    assert r.cases[0].p95("mem") < r.cases[0].p95("bare")
    row = table(r).splitlines()[-1]
    assert "(below zero: see the note)" in row
    note = below_zero(r)
    assert "0.5 s, one: the bare side's slowest runs took 95.3, 60.0, 55.0 ms" in note
    assert "its median 5.0 ms" in note and "Mem01Session's 19.0, 18.0, 15.0 ms" in note
    assert "with 40 runs a p95 is set by the slowest two or three" in note


def test_no_note_when_every_added_figure_is_positive() -> None:
    r = result([5.0] * 40, [15.0] * 40)
    assert below_zero(r) == ""
    assert "below zero" not in table(r)
