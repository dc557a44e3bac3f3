"""Row <-> record mapping: the column list the read path loads positionally."""

from __future__ import annotations

from dataclasses import fields
from datetime import UTC, datetime

from mem01session.engine.records import Belief, Source
from mem01session.engine.row_mapping import BELIEF_COLUMNS, BELIEF_FIELDS, belief_from_values


def test_the_belief_columns_are_the_beliefs_fields_in_order() -> None:
    columns = [c.strip() for c in BELIEF_COLUMNS.split(",")]
    assert len(columns) == BELIEF_FIELDS
    assert columns == [f.name for f in fields(Belief)][:BELIEF_FIELDS]
    assert [f.name for f in fields(Belief)][BELIEF_FIELDS:] == ["sources"]


def test_a_belief_from_its_column_values() -> None:
    at = datetime(2026, 3, 1, tzinfo=UTC)
    source = Source("chat-1", "turn-3", "I moved", at, "rules-v1", 7)
    values = (5, "u1", "Lives in SF", None, "active", 0.9, at, None, at, at, 2, None, None, at)
    belief = belief_from_values(values, (source,))
    assert (belief.id, belief.content, belief.version, belief.last_confirmed_at) == (
        5, "Lives in SF", 2, at,
    )  # fmt: skip
    assert belief.sources == (source,)
