"""Invalid batches are rejected whole, with the op and the reason, before anything is written."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import pytest

from mem01session.db import Database
from mem01session.embeddings import HashingEmbedder, Vector
from mem01session.engine import BeliefEngine
from mem01session.engine.ops import MAX_CONTENT_CHARS, Op, Provenance
from mem01session.errors import ConfigError, InvalidOpError
from tests.conftest import TEST_DIM

from .conftest import TickingClock
from .dbstate import table_rows

pytestmark = pytest.mark.asyncio(loop_scope="module")

PROV = Provenance(session_id="s1")
KEY = "Z3tQ8vLm2XcR7bNp4KdW9sYh6FjA1uEo"


class CountingEmbedder(HashingEmbedder):
    """The offline embedder, counting calls: validation must happen before embedding."""

    def __init__(self, dim: int) -> None:
        super().__init__(dim)
        self.calls = 0

    async def embed(self, texts: Sequence[str]) -> list[Vector]:
        self.calls += 1
        return await super().embed(texts)


@pytest.fixture
def counting() -> CountingEmbedder:
    return CountingEmbedder(TEST_DIM)


@pytest.fixture
def engine(module_db: Database, counting: CountingEmbedder, clock: TickingClock) -> BeliefEngine:
    """All tests here share one database; each works as its own user (``uid``)."""
    return BeliefEngine(module_db, counting, clock=clock)


# (op, reason fragment); each is placed at index 1, after a valid ADD.
FIELD_FAILURES: list[tuple[Op, str]] = [
    (Op("DELETE", content="x"), "unknown op 'DELETE'"),
    (Op("ADD"), "content is required"),
    (Op.add(""), "content is empty"),
    (Op.add(" \n\t "), "content is empty"),
    (Op.add("x" * (MAX_CONTENT_CHARS + 1)), "over the limit"),
    (Op.add("nul\x00byte"), "content contains a NUL byte"),
    (Op.add("ok", key="k\x00"), "key contains a NUL byte"),
    (Op.add("ok", evidence="e\x00"), "evidence contains a NUL byte"),
    (Op.invalidate(1, "r\x00"), "reason contains a NUL byte"),
    # A terminal's escape or bell (recall printed "- Likes[31m tea" from one).
    (Op.add("Likes\x1b[31m tea"), "content contains a control character (U+001B)"),
    (Op.add("ok", key="k\x07"), "key contains a control character (U+0007)"),
    (Op.add("ok\x9b2J"), "content contains a control character (U+009B)"),
    # A direct write holding a secret is refused (the worker's screen drops or redacts
    # these before they get here); the message names its kind, never the secret.
    (Op.add(f"API key is sk-proj-{KEY}"), "content holds a secret (api key)"),
    (Op.add("ok", key=f"token-sk-proj-{KEY}"), "key holds a secret (api key)"),
    (Op.add("ok", evidence=f"my key is sk-proj-{KEY}"), "evidence holds a secret"),
    (Op.invalidate(1, "password: hunter2hunter2"), "reason holds a secret (password)"),
    (Op.add("ok", confidence=1.5), "between 0 and 1"),
    (Op.add("ok", confidence=-0.1), "between 0 and 1"),
    (Op.add("ok", confidence=float("nan")), "between 0 and 1"),
    (Op.add("ok", confidence="high"), "confidence must be a number"),  # type: ignore[arg-type]
    (Op.add("ok", confidence=True), "confidence must be a number"),
    (Op.add("ok", key="k" * 201), "key is 201 characters"),
    (Op("ADD", content="ok", target=1), "ADD takes no target"),
    (Op("ADD", content=42), "content must be a string"),  # type: ignore[arg-type]
    (Op("ADD", content="ok", valid_from="2020"), "valid_from must be a datetime"),  # type: ignore[arg-type]
    (Op("UPDATE", content="x"), "target is required"),
    (Op("UPDATE", target=1), "UPDATE needs content and/or confidence"),
    (Op.update("b1", "x"), "target must be a belief id"),
    (Op.update(True, "x"), "target must be a belief id"),  # type: ignore[arg-type]
    (Op("SUPERSEDE", target=1), "content is required"),
    (Op("SUPERSEDE", content="x", targets=(1, 2)), "takes one target"),
    (Op("INVALIDATE", target=1), "reason is required"),
    (Op("INVALIDATE", target=1, reason="   "), "reason is required"),
    (Op.merge([1], "x"), "at least 2 distinct targets, got 1"),
    (Op.merge([1, 1], "x"), "at least 2 distinct targets, got 1"),
    (Op("MERGE", content="x", target=1, targets=(1, 2)), "MERGE takes targets"),
    (Op.update(-3, "x"), "belief #-3 does not exist"),
    (Op.update(2**63, "x"), "does not exist"),
    ("ADD likes tea", "not an Op"),  # type: ignore[list-item]
]


@pytest.mark.parametrize(("bad", "reason"), FIELD_FAILURES, ids=[r for _, r in FIELD_FAILURES])
async def test_field_failures_reject_the_batch_before_any_io(
    engine: BeliefEngine, uid: str, counting: CountingEmbedder, bad: Op, reason: str
) -> None:
    before = await table_rows(engine)
    with pytest.raises(InvalidOpError) as info:
        await engine.apply(uid, [Op.add("Likes tea"), bad], provenance=PROV)
    assert info.value.index == 1
    assert reason in info.value.reason
    assert str(info.value).startswith("op #1 (")
    assert KEY not in str(info.value) and "hunter2" not in str(info.value)
    assert counting.calls == 0
    assert await table_rows(engine) == before


async def test_the_marks_of_a_redacted_secret_are_not_a_secret(
    engine: BeliefEngine, uid: str
) -> None:
    result = await engine.apply(
        uid,
        [Op.add("Changed their password", evidence="my password is [redacted]. token: ***")],
        provenance=PROV,
    )
    assert result.changes[0].op == "ADD"


async def test_op_kind_is_case_insensitive(engine: BeliefEngine, uid: str) -> None:
    result = await engine.apply(uid, [Op("add", content="Likes tea")], provenance=PROV)
    assert result.changes[0].op == "ADD"


async def seed(engine: BeliefEngine, uid: str) -> dict[str, int]:
    """Alice: an active, a superseded and an invalidated belief; Bob: one active belief."""
    r = await engine.apply(
        uid, [Op.add("Likes tea"), Op.add("Lives in Paris"), Op.add("Is vegan")], provenance=PROV
    )
    tea, paris, vegan = (c.belief_id for c in r.changes)
    r = await engine.apply(
        uid, [Op.supersede(paris, "Lives in Rome"), Op.invalidate(vegan, "no")], provenance=PROV
    )
    rome = r.changes[0].belief_id
    bob = (await engine.apply(uid + "-bob", [Op.add("Likes jazz")], provenance=PROV)).changes[0]
    return {"tea": tea, "paris": paris, "vegan": vegan, "rome": rome, "bob": bob.belief_id}


@pytest.mark.parametrize(
    ("make", "reason"),
    [
        (lambda ids: Op.update(ids["bob"], "Likes jazz a lot"), "does not exist for this user"),
        (lambda ids: Op.invalidate(ids["bob"], "x"), "does not exist for this user"),
        (lambda ids: Op.merge([ids["tea"], ids["bob"]], "x"), "does not exist for this user"),
        (lambda ids: Op.update(999_999, "x"), "belief #999999 does not exist for this user"),
        (lambda ids: Op.supersede(ids["paris"], "Lives in Oslo"), "is superseded, not active"),
        (lambda ids: Op.update(ids["vegan"], confidence=0.1), "is invalidated, not active"),
    ],
    ids=[
        "update-other-user",
        "invalidate-other-user",
        "merge-other-user",
        "missing",
        "superseded",
        "invalidated",
    ],
)
async def test_target_failures_reject_the_batch(
    engine: BeliefEngine, uid: str, make: object, reason: str
) -> None:
    ids = await seed(engine, uid)
    before = await table_rows(engine)
    op = make(ids)  # type: ignore[operator]
    with pytest.raises(InvalidOpError) as info:
        await engine.apply(
            uid,
            [Op.add("Plays chess"), Op.update(ids["rome"], "Lives in Rome, Italy"), op],
            provenance=PROV,
        )
    assert (info.value.index, info.value.op) == (2, op.op)
    assert reason in info.value.reason
    assert await table_rows(engine) == before


async def test_other_users_belief_looks_exactly_like_a_missing_one(
    engine: BeliefEngine, uid: str
) -> None:
    ids = await seed(engine, uid)
    missing = ids["bob"] + 1000
    with pytest.raises(InvalidOpError) as theirs:
        await engine.apply(uid, [Op.update(ids["bob"], "x")], provenance=PROV)
    with pytest.raises(InvalidOpError) as nobody:
        await engine.apply(uid, [Op.update(missing, "x")], provenance=PROV)
    assert theirs.value.reason.replace(str(ids["bob"]), "N") == nobody.value.reason.replace(
        str(missing), "N"
    )


async def test_a_belief_may_be_targeted_once_per_batch(engine: BeliefEngine, uid: str) -> None:
    ids = await seed(engine, uid)
    before = await table_rows(engine)
    with pytest.raises(InvalidOpError) as info:
        await engine.apply(
            uid,
            [Op.update(ids["tea"], confidence=0.5), Op.invalidate(ids["tea"], "x")],
            provenance=PROV,
        )
    assert info.value.index == 1
    assert f"belief #{ids['tea']} is already targeted by op #0" in info.value.reason
    assert await table_rows(engine) == before


async def test_a_valid_op_followed_by_an_invalid_one_changes_nothing(
    engine: BeliefEngine, uid: str
) -> None:
    ids = await seed(engine, uid)
    version = await engine.user_version(uid)
    before = await table_rows(engine)
    with pytest.raises(InvalidOpError):
        await engine.apply(
            uid,
            [
                Op.add("Plays chess"),
                Op.add("Likes tea"),  # would confirm
                Op.supersede(ids["tea"], "Likes coffee"),
                Op.invalidate(ids["paris"], "already superseded"),
            ],
            provenance=PROV,
        )
    assert await table_rows(engine) == before
    assert await engine.user_version(uid) == version


async def test_a_conflict_found_while_applying_rolls_back_earlier_ops(
    engine: BeliefEngine, uid: str
) -> None:
    ids = await seed(engine, uid)
    before = await table_rows(engine)
    with pytest.raises(InvalidOpError, match="restates active belief"):
        await engine.apply(
            uid,
            [Op.add("Plays chess"), Op.update(ids["tea"], "plays chess")],
            provenance=PROV,
        )
    assert await table_rows(engine) == before


@pytest.mark.parametrize(
    ("user_id", "reason"),
    [
        ("", "empty"),
        ("   ", "empty"),
        ("a\x00b", "NUL"),
        ("u" * 201, "over the limit"),
        (42, "must be a string"),
    ],
)
async def test_bad_user_ids_are_refused(
    engine: BeliefEngine, counting: CountingEmbedder, user_id: object, reason: str
) -> None:
    with pytest.raises(ConfigError, match=reason):
        await engine.apply(user_id, [Op.add("Likes tea")], provenance=PROV)  # type: ignore[arg-type]
    assert counting.calls == 0
    with pytest.raises(ConfigError, match=reason):
        await engine.history(user_id)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=reason):
        await engine.erase_user(user_id)  # type: ignore[arg-type]


async def test_longest_allowed_user_id_and_content_are_accepted(
    engine: BeliefEngine, uid: str
) -> None:
    long_uid = "u" * 200
    result = await engine.apply(long_uid, [Op.add("x" * MAX_CONTENT_CHARS)], provenance=PROV)
    assert (
        await engine.get(long_uid, result.changes[0].belief_id)
    ).content == "x" * MAX_CONTENT_CHARS


async def test_bad_provenance_is_refused(engine: BeliefEngine, uid: str) -> None:
    with pytest.raises(ConfigError, match="session_id"):
        await engine.apply(uid, [Op.add("x")], provenance=Provenance(session_id="a\x00"))
    with pytest.raises(ConfigError, match="observed_at"):
        await engine.apply(
            uid,
            [Op.add("x")],
            provenance=Provenance(observed_at="yesterday"),  # type: ignore[arg-type]
        )
    assert await engine.user_version(uid) == 0


async def test_naive_datetimes_are_taken_as_utc(engine: BeliefEngine, uid: str) -> None:
    result = await engine.apply(
        uid, [Op.add("Plays chess", valid_from=datetime(2024, 1, 2, 3, 4))], provenance=PROV
    )
    belief = await engine.get(uid, result.changes[0].belief_id)
    assert belief.valid_from.utcoffset() is not None
    assert belief.valid_from.replace(tzinfo=None) == datetime(2024, 1, 2, 3, 4)
