"""Migrations on a Citus coordinator: revision 0006 distributes, its downgrade undoes it.

The plain suite's migration tests run here too (upgrade, downgrade to base and back,
drift check, concurrent upgrades from three processes, revision 0003 on distributed
tables).
"""

from __future__ import annotations

import psycopg

from mem01session.db import migrate
from tests.citus.reuse import reuse
from tests.db import test_migrations

reuse(test_migrations, globals())

USER_TABLES = (
    "beliefs",
    "belief_events",
    "belief_sources",
    "belief_terms",
    "belief_twins",
    "episodes",
    "episode_terms",
    "memory_users",
    "memory_jobs",
)
ID_TABLES = ("beliefs", "belief_events", "belief_sources", "memory_jobs")


def placement(url: str) -> dict[str, tuple[str, str | None, int]]:
    """table -> (Citus table type, distribution column, colocation id)."""
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT CAST(table_name AS text), citus_table_type, distribution_column, "
            "colocation_id FROM citus_tables"
        ).fetchall()
    return {t: (kind, None if col == "<none>" else col, co) for t, kind, col, co in rows}


def test_head_distributes_the_user_tables_by_user_id_together(db_url: str) -> None:
    tables = placement(db_url)
    assert set(tables) == {*USER_TABLES, "memory_meta"}  # mem01session_version stays local
    kinds = {tables[t][:2] for t in USER_TABLES}
    assert kinds == {("distributed", "user_id")}
    assert len({tables[t][2] for t in USER_TABLES}) == 1  # one colocation group
    assert tables["memory_meta"][0] == "reference"
    assert migrate.check(db_url) == []


def _seed(conn: psycopg.Connection[tuple[object, ...]], user: str) -> None:
    conn.execute("INSERT INTO memory_users (user_id) VALUES (%s)", (user,))
    (bid,) = conn.execute(
        "INSERT INTO beliefs (user_id, content, norm_content) VALUES (%s, 'x', 'x') RETURNING id",
        (user,),
    ).fetchone() or (None,)
    conn.execute(
        "INSERT INTO belief_events (user_id, op, belief_id) VALUES (%s, 'ADD', %s)", (user, bid)
    )
    conn.execute("INSERT INTO belief_sources (user_id, belief_id) VALUES (%s, %s)", (user, bid))
    conn.execute("INSERT INTO belief_terms (user_id, lexeme, beliefs) VALUES (%s, 'x', 1)", (user,))
    conn.execute(
        "INSERT INTO memory_jobs (user_id, session_id, payload, idempotency_key) "
        "VALUES (%s, 's', '{}', %s)",
        (user, f"k-{user}"),
    )


def _rows(url: str) -> dict[str, list[tuple[object, ...]]]:
    with psycopg.connect(url) as conn:
        return {
            t: conn.execute(f"SELECT user_id, id FROM {t} ORDER BY user_id, id").fetchall()
            for t in ID_TABLES
        }


def test_rows_move_into_the_shards_and_back(empty_db_url: str) -> None:
    url = empty_db_url
    migrate.upgrade(url, "0004", embedding_dim=8)
    with psycopg.connect(url, autocommit=True) as conn:
        for user in ("ann", "bob", "cyd"):
            _seed(conn, user)
    before = _rows(url)

    migrate.upgrade(url)
    assert set(placement(url)) == {*USER_TABLES, "memory_meta"}
    assert _rows(url) == before
    with psycopg.connect(url, autocommit=True) as conn:
        # The coordinator's own copies were emptied once the rows were in the shards.
        sizes = conn.execute(
            "SELECT sum(pg_relation_size(c.oid)) FROM pg_class c "
            "WHERE c.relname = ANY(%s) AND c.relkind = 'r'",
            (list(USER_TABLES),),
        ).fetchone()
        assert sizes == (0,)
        _seed(conn, "dee")  # ids continue where the identity columns stopped
    after = _rows(url)
    for table in ID_TABLES:
        [(_, new_id)] = [r for r in after[table] if r[0] == "dee"]
        assert new_id > max(int(i) for _, i in before[table])  # type: ignore[call-overload]

    # A shard count change, which identity columns made impossible (revision 0005).
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "SELECT alter_distributed_table('beliefs', shard_count := 6, "
            "cascade_to_colocated := true)"
        )
    assert _rows(url) == after

    migrate.downgrade(url, "0004")
    assert placement(url) == {}
    assert _rows(url) == after
    with psycopg.connect(url) as conn:
        kinds = conn.execute(
            "SELECT attidentity FROM pg_attribute WHERE attname = 'id' "
            "AND attrelid = ANY(SELECT CAST(t AS regclass) FROM unnest(%s::text[]) t)",
            (list(ID_TABLES),),
        ).fetchall()
    assert kinds == [("a",)] * len(ID_TABLES)  # GENERATED ALWAYS AS IDENTITY again
    migrate.upgrade(url)
    assert set(placement(url)) == {*USER_TABLES, "memory_meta"}
    assert migrate.check(url) == []
