"""The pipelined write transaction on the direct pool (engine/tx.py)."""

from __future__ import annotations

import psycopg
import pytest

from mem01session.db import Database
from mem01session.engine import BeliefEngine
from mem01session.engine.ops import Op, Provenance
from mem01session.engine.tx import Tx, transaction
from mem01session.engine.write import TxHook
from mem01session.errors import UserErasedError

from .dbstate import counts, table_rows

U = "alice"
PROV = Provenance(session_id="s1", extractor="test")
BACKEND = "SELECT pg_backend_pid() AS pid"


async def test_statements_sent_unread_commit_with_the_transaction(db: Database) -> None:
    async def body(tx: Tx) -> int:
        await tx.run("CREATE TABLE t (x int)", {})
        for x in range(3):
            await tx.run("INSERT INTO t VALUES (:x)", {"x": x})
        pending = await tx.later("SELECT count(*) AS n FROM t", {})
        return int((await pending.one())["n"])

    assert await transaction(db.direct, body) == 3
    assert await db.direct.fetch("SELECT sum(x) AS s FROM t", {}) == [{"s": 3}]


async def test_a_failing_statement_sent_unread_rolls_everything_back(db: Database) -> None:
    await db.direct.fetch("CREATE TABLE t (x int PRIMARY KEY)", {})

    async def body(tx: Tx) -> None:
        await tx.run("INSERT INTO t VALUES (1)", {})
        await tx.run("INSERT INTO t VALUES (1)", {})  # fails; raised by the next read
        await tx.rows("SELECT 1 AS one", {})

    with pytest.raises(psycopg.errors.UniqueViolation):
        await transaction(db.direct, body)
    assert await db.direct.fetch("SELECT count(*) AS n FROM t", {}) == [{"n": 0}]
    # The connection went back to the pool clean: the next transaction works on it.
    assert await transaction(db.direct, lambda tx: tx.rows("SELECT 2 AS two", {})) == [{"two": 2}]


async def test_an_error_raised_by_the_body_rolls_back(db: Database) -> None:
    await db.direct.fetch("CREATE TABLE t (x int)", {})
    boom = RuntimeError("boom")

    async def body(tx: Tx) -> None:
        await tx.run("INSERT INTO t VALUES (1)", {})
        raise boom

    with pytest.raises(RuntimeError) as info:
        await transaction(db.direct, body)
    assert info.value is boom
    assert await db.direct.fetch("SELECT count(*) AS n FROM t", {}) == [{"n": 0}]


async def test_a_connection_killed_while_idle_costs_no_apply(engine: BeliefEngine) -> None:
    """The server dropped the pooled connection (a restart, an idle timeout): the next
    apply runs on a new one instead of failing."""
    await engine.apply(U, [Op.add("Likes tea")], provenance=PROV)
    [old] = await engine.db.direct.fetch(BACKEND, {})
    with psycopg.connect(engine.db.url, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (old["pid"],))
    result = await engine.apply(U, [Op.add("Plays chess")], provenance=PROV)
    assert result.user_version == 2
    assert (await counts(engine, U))["beliefs"] == 2


async def test_a_tx_hook_runs_in_the_transaction_and_can_roll_it_back(
    engine: BeliefEngine,
) -> None:
    await engine.apply(U, [Op.add("Likes tea")], provenance=PROV)
    before = await table_rows(engine)
    boom = RuntimeError("job bookkeeping failed")

    async def fail(tx: Tx) -> None:
        row = await tx.one("SELECT count(*) AS n FROM beliefs WHERE user_id = :u", {"u": U})
        assert row["n"] == 2  # after the ops, in their transaction
        raise boom

    with pytest.raises(RuntimeError) as info:
        await engine.apply(U, [Op.add("Plays chess")], provenance=PROV, hook=TxHook(fail))
    assert info.value is boom
    assert await table_rows(engine) == before
    assert await engine.user_version(U) == 1


async def test_an_erased_user_is_refused_on_the_pipelined_path(engine: BeliefEngine) -> None:
    await engine.apply(U, [Op.add("Likes tea")], provenance=PROV)
    await engine.erase_user(U)
    with pytest.raises(UserErasedError):
        await engine.apply(U, [Op.add("Plays chess")], provenance=PROV)
    assert (await counts(engine, U))["beliefs"] == 0
