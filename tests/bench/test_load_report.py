"""The load report shows every round of every machine state, and the worst added p95."""

from __future__ import annotations

import pytest
from bench.load import MACHINE_STATES, LoadResult, Phase, Runs
from bench.load_report import capacity, chart_data, note, spread, table, whole_ms

# Phases per round: each state with the worker here and apart, and the busy one also with
# the worker here never giving way (as bench.load._state runs them).
PER_ROUND = len(MACHINE_STATES) * 2 + 1


def phases(rounds: int, extra: float) -> list[Phase]:
    """Each state's phases; Mem01Session runs ``extra`` ms slower per round number (bare:
    10 ms a run)."""
    out: list[Phase] = []
    for round_ in range(1, rounds + 1):
        for loaded, frozen in MACHINE_STATES:
            kinds = [(False, True), (True, True)]
            if loaded and not frozen:
                kinds.insert(1, (False, False))
            for separate, gives_way in kinds:
                p = Phase(loaded, separate, frozen, gives_way, round=round_)
                p.bare = Runs(ms=[10.0] * 100, wall_s=1.0)
                p.mem = Runs(ms=[10.0 + extra * round_] * 100, wall_s=1.0)
                out.append(p)
    return out


def test_two_rounds_show_each_round_and_the_worst() -> None:
    r = LoadResult(50, 10, 10, phases(2, 40.0), None, rounds=2)
    summary = spread(r).strip().splitlines()
    assert summary[0] == "| machine | worker | added p95 ms, rounds 1-2 | worst |"
    assert len(summary) == 2 + PER_ROUND
    assert summary[2] == "| idle | in the runs' process | 40.0 / 80.0 | **80.0** |"
    assert (
        "| 2 busy processes | in the runs' process, never giving way | 40.0 / 80.0 | **80.0** |"
        in summary
    )
    text = table(r)
    assert text.startswith(spread(r))
    runs_rows = [line for line in text.splitlines() if line.startswith(("| 1 |", "| 2 |"))]
    assert len(runs_rows) == 2 * 2 * PER_ROUND  # both tables, every phase
    assert len(chart_data(r)["phases"]) == PER_ROUND  # the first round's


def test_one_round_has_no_round_column_and_no_summary() -> None:
    r = LoadResult(50, 10, 10, phases(1, 40.0), None, rounds=1)
    assert spread(r) == ""
    header = table(r).splitlines()[0]
    assert header.startswith("| machine | worker | runs |")


def test_the_servers_cpu_is_in_the_table_and_the_machines_capacity() -> None:
    ps = phases(1, 40.0)
    for p in ps:
        # 100 turns: this process 1.0 s, its embedding process 0.5 s, the server 0.3 s
        p.bare.cpu_s, p.mem.cpu_s, p.helpers_cpu_s, p.server_cpu_s = 0.4, 1.0, 0.5, 0.3
    ps[1].server_cpu_s = None  # a server on another machine: not counted, and said so
    r = LoadResult(50, 10, 10, ps, None, rounds=1)
    rows = table(r).splitlines()
    assert "| 4.0; 10.0 + 5.0 + 3.0 |" in rows[2]
    assert "| 4.0; 10.0 + 5.0 + ? |" in rows[3]
    assert whole_ms(ps[0]) == 18.0
    assert whole_ms(ps[1]) is None
    assert "one turn with memory cost 18.0 ms of CPU against 4.0 bare" in capacity(r)


@pytest.mark.slow
def test_the_note_gives_the_machines_speed_at_both_ends_of_the_run() -> None:
    ps = phases(1, 40.0)
    for p in ps:
        p.bare.cpu_s, p.mem.cpu_s, p.helpers_cpu_s, p.server_cpu_s = 0.4, 1.0, 0.5, 0.3
    r = LoadResult(50, 10, 10, ps, None, rounds=1)
    r.cpu_ms, r.cpu_ms_end = 56.4, 71.0
    assert "CPU reference of this run: 56 ms at its start, 71 ms at its end" in note(r)
