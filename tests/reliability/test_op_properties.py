"""Property-based attack on the write path: random valid and invalid op batches.

Each example is a fresh user (same database) and a program of batches whose ops draw
their kind, content and targets at random: the user's own beliefs in any status, another
user's belief, ids that do not exist, aliases, duplicates, empty or oversized or NUL
content, bad confidences. After every batch either it applied whole, or it raised a
clear error and not a single row of any table changed. After every batch the invariants
of ``harness.check_invariants`` hold (one successor per superseded belief; merged
beliefs point at the canonical belief of their MERGE, which is active or was retired by a
later event; every active belief has provenance; the ledger replays to the state).
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mem01session.engine import BeliefEngine
from mem01session.engine.ops import Op, Provenance
from mem01session.errors import ConfigError, InvalidOpError, Mem01Error
from tests.reliability.harness import check_invariants, snapshot

GOOD_CONTENTS = (
    "Lives in Lisbon",
    "Lives in Porto",
    "lives in lisbon.",  # a restatement of the first, after normalization
    "Has a dog named Rex",
    "Likes green tea",
    "Works at Acme",
)
BAD_CONTENTS = ("", "   ", "x" * 1001, "bad\x00byte")

own = st.tuples(st.just("own"), st.integers(0, 7))
bad_ref = st.one_of(
    st.tuples(st.just("other"), st.just(0)),
    st.tuples(st.just("missing"), st.sampled_from([0, -3, 2**63, 10**12])),
    st.tuples(st.just("alias"), st.just("b1")),
)
content = st.sampled_from(GOOD_CONTENTS)
key = st.one_of(st.none(), st.sampled_from(["home.city", "pets.dog"]))
confidence = st.one_of(st.none(), st.sampled_from([0.0, 0.5, 1.0]))


def spec(kind: str, **fields: Any) -> st.SearchStrategy[dict[str, Any]]:
    base: dict[str, Any] = {
        "kind": st.just(kind),
        "content": st.none(),
        "target": st.none(),
        "targets": st.just([]),
        "key": st.none(),
        "confidence": st.none(),
        "reason": st.none(),
    }
    return st.fixed_dictionaries(base | fields)


# Well-formed ops (whose targets may still be retired by an earlier op or batch) ...
valid = st.one_of(
    spec("ADD", content=content, key=key, confidence=confidence),
    spec("UPDATE", target=own, content=st.one_of(st.none(), content), confidence=confidence),
    spec("SUPERSEDE", target=own, content=content, key=key),
    spec("INVALIDATE", target=own, reason=st.just("no longer true")),
    spec("MERGE", targets=st.lists(own, min_size=2, max_size=3), content=content),
)
# ... and malformed ones: any field may be wrong.
garbage = st.fixed_dictionaries(
    {
        "kind": st.sampled_from(
            ["ADD", "UPDATE", "SUPERSEDE", "INVALIDATE", "MERGE", "add", "DELETE", ""]
        ),
        "content": st.one_of(st.none(), content, st.sampled_from(BAD_CONTENTS)),
        "target": st.one_of(st.none(), own, bad_ref),
        "targets": st.lists(st.one_of(own, bad_ref), max_size=3),
        "key": st.one_of(key, st.just("k" * 300)),
        "confidence": st.one_of(confidence, st.sampled_from([1.5, -1.0, float("nan")])),
        "reason": st.one_of(st.none(), st.just("because")),
    }
)
op_spec = st.one_of(valid, valid, valid, garbage)
program = st.lists(st.lists(op_spec, min_size=1, max_size=3), min_size=1, max_size=6)


def resolve(r: Any, own: list[int], other: int) -> Any:
    if r is None:
        return None
    kind, value = r
    if kind == "own":
        return own[value % len(own)] if own else 10**12
    if kind == "other":
        return other
    return value


counter = iter(range(10**9))


@pytest.mark.slow
@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(batches=program)
async def test_random_batches_apply_whole_or_not_at_all(
    engine: BeliefEngine, batches: list[list[dict[str, Any]]]
) -> None:
    pool = engine.db.sa_engine
    user = f"prop-{next(counter)}"
    other_user = f"other-{user}"
    [seed] = (
        await engine.apply(other_user, [Op.add("Secret of another user")], provenance=Provenance())
    ).changes
    await engine.apply(
        user,
        [Op.add("Lives in Lisbon", key="home.city"), Op.add("Has a dog named Rex")],
        provenance=Provenance(session_id="seed", extractor="test"),
    )
    other_before = await snapshot(pool, other_user)
    for batch in batches:
        own = [b.id for b in await engine.history(user, limit=1000)]
        ops = [
            Op(
                spec["kind"],
                content=spec["content"],
                target=resolve(spec["target"], own, seed.belief_id),
                targets=tuple(resolve(t, own, seed.belief_id) for t in spec["targets"]),
                key=spec["key"],
                confidence=spec["confidence"],
                reason=spec["reason"],
            )
            for spec in batch
        ]
        before = await snapshot(pool)
        try:
            result = await engine.apply(
                user, ops, provenance=Provenance(session_id="prop", extractor="hypothesis")
            )
        except (InvalidOpError, ConfigError) as exc:
            assert isinstance(exc, Mem01Error) and str(exc)
            if isinstance(exc, InvalidOpError):
                assert f"op #{exc.index}" in str(exc)
            assert await snapshot(pool) == before, f"partial batch after {exc}"
        else:
            assert len(result.changes) == len(ops)
        await check_invariants(pool, user, single_valued=())
    assert await snapshot(pool, other_user) == other_before
