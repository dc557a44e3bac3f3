"""The job queue on a cluster: ids in arrival order wherever the user's shards live, and
one user's turns processed in that order across a shard move."""

from __future__ import annotations

from datetime import timedelta

import psycopg
import pytest

from mem01session.db import Database
from mem01session.queue import JobStore
from mem01session.queue.turns import TurnMessage
from tests.citus.cluster import require_cluster
from tests.engine.conftest import TickingClock

require_cluster()
pytestmark = pytest.mark.citus

WORKER_RANGE = 1 << 48  # ids a worker's own sequence range would hand out start here


def move_user(url: str, user_id: str) -> tuple[str, str]:
    """Move the user's shard group to the other worker; (from, to) as host:port."""
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT shardid, nodename, nodeport FROM citus_shards "
            "WHERE table_name = 'memory_jobs'::regclass "
            "AND shardid = get_shard_id_for_distribution_column('memory_jobs', CAST(%s AS text))",
            (user_id,),
        ).fetchone()
        assert row is not None
        shard, host, port = row
        target = conn.execute(
            "SELECT nodename, nodeport FROM pg_dist_node WHERE groupid > 0 AND isactive "
            "AND noderole = 'primary' AND (nodename, nodeport) <> (%s, %s) LIMIT 1",
            (host, port),
        ).fetchone()
        assert target is not None
        conn.execute(
            "SELECT citus_move_shard_placement(%s, %s, %s, %s, %s, "
            "shard_transfer_mode := 'block_writes')",
            (shard, host, port, target[0], target[1]),
        )
    return f"{host}:{port}", f"{target[0]}:{target[1]}"


async def test_a_users_turns_keep_their_order_across_a_shard_move(
    db: Database, db_url: str
) -> None:
    store = JobStore(db)
    clock = TickingClock()
    user = "mover"
    ids = [
        await store.enqueue(user, "s", [TurnMessage("user", f"turn {n}")], now=clock())
        for n in range(3)
    ]
    source, target = move_user(db_url, user)
    assert source != target
    ids += [
        await store.enqueue(user, "s", [TurnMessage("user", f"turn {n}")], now=clock())
        for n in range(3, 6)
    ]
    assert ids == sorted(ids) and max(ids) < WORKER_RANGE  # the coordinator's sequence

    order = []
    while claimed := await store.claim("w", now=clock(), lease=timedelta(minutes=1)):
        [job] = claimed
        order.append(job.turn().messages[0].text)
        await store.complete_without_ops(job, "w", now=clock(), usage={})
    assert order == [f"turn {n}" for n in range(6)]
