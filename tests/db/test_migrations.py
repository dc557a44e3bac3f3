"""The schema is owned by Alembic: up, down, up again, no drift, safe when concurrent."""

from __future__ import annotations

import subprocess
import sys
import uuid
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest

from mem01session.db import migrate
from mem01session.db.vector_index import VectorIndex
from mem01session.errors import DatabaseError

TABLES = {
    "beliefs",
    "belief_events",
    "belief_sources",
    "belief_terms",
    "belief_twins",
    "episodes",
    "episode_terms",
    "memory_jobs",
    "memory_users",
    "memory_meta",
}


def tables(url: str) -> set[str]:
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'public'"
        ).fetchall()
    return {r[0] for r in rows} - {"mem01session_version"}


def test_upgrade_downgrade_upgrade(empty_db_url: str) -> None:
    assert migrate.current(empty_db_url) is None
    assert migrate.upgrade(empty_db_url, embedding_dim=32) == migrate.head_revision()
    assert tables(empty_db_url) == TABLES
    assert migrate.check(empty_db_url) == []

    assert migrate.downgrade(empty_db_url, "base") is None
    assert tables(empty_db_url) == set()

    assert migrate.upgrade(empty_db_url, embedding_dim=32) == migrate.head_revision()
    assert tables(empty_db_url) == TABLES
    assert migrate.check(empty_db_url) == []


APP_REVISION = "ae1027a6acf"  # an application's own Alembic revision


def _app_alembic(url: str) -> None:
    """What an application's own Alembic leaves in the database: its version table, with
    its revision, and its own table."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE TABLE alembic_version (version_num varchar(32) PRIMARY KEY)")
        conn.execute("INSERT INTO alembic_version VALUES (%s)", (APP_REVISION,))
        conn.execute("CREATE TABLE app_orders (id int PRIMARY KEY)")


def test_an_applications_own_alembic_in_the_same_database_is_left_alone(
    empty_db_url: str,
) -> None:
    _app_alembic(empty_db_url)
    assert migrate.current(empty_db_url) is None
    assert migrate.upgrade(empty_db_url, embedding_dim=32) == migrate.head_revision()
    assert migrate.current(empty_db_url) == migrate.head_revision()
    assert migrate.check(empty_db_url) == []  # the application's table is not drift
    with psycopg.connect(empty_db_url) as conn:
        app = conn.execute("SELECT version_num FROM alembic_version").fetchall()
    assert app == [(APP_REVISION,)]
    assert migrate.downgrade(empty_db_url, "base") is None
    assert tables(empty_db_url) == {"alembic_version", "app_orders"}


def _as_before(conn: psycopg.Connection[tuple[object, ...]]) -> None:
    """The version table as releases before 0.2 kept it: Alembic's default."""
    conn.execute("ALTER TABLE mem01session_version RENAME TO alembic_version")
    conn.execute("ALTER INDEX mem01session_version_pkc RENAME TO alembic_version_pkc")


def test_a_revision_an_older_release_kept_in_alembic_version_is_read_then_moved(
    empty_db_url: str,
) -> None:
    migrate.upgrade(empty_db_url, "0014", embedding_dim=32)
    with psycopg.connect(empty_db_url, autocommit=True) as conn:  # as releases before 0.2
        _as_before(conn)
        conn.execute("INSERT INTO alembic_version VALUES (%s)", (APP_REVISION,))
    assert migrate.current(empty_db_url) == "0014"
    assert migrate.upgrade(empty_db_url) == migrate.head_revision()
    with psycopg.connect(empty_db_url) as conn:
        ours = conn.execute("SELECT version_num FROM mem01session_version").fetchall()
        app = conn.execute("SELECT version_num FROM alembic_version").fetchall()
    assert ours == [(migrate.head_revision(),)] and app == [(APP_REVISION,)]
    # Alone in it, the old table goes.
    with psycopg.connect(empty_db_url, autocommit=True) as conn:
        conn.execute("DROP TABLE alembic_version")
        _as_before(conn)
    migrate.upgrade(empty_db_url)
    assert "alembic_version" not in tables(empty_db_url)
    assert migrate.current(empty_db_url) == migrate.head_revision()


def _column_type(conn: psycopg.Connection[tuple[object, ...]]) -> object:
    row = conn.execute(
        "SELECT format_type(atttypid, atttypmod) FROM pg_attribute "
        "WHERE attrelid = 'beliefs'::regclass AND attname = 'embedding'"
    ).fetchone()
    return row[0] if row else None


_BELIEF = (
    "INSERT INTO beliefs (user_id, content, norm_content, valid_from, embedding{model_col}) "
    "VALUES ('u', %s, %s, now(), %s::vector{model_val})"
)


def test_vectors_name_their_model_from_revision_0003(empty_db_url: str) -> None:
    migrate.upgrade(empty_db_url, "0002", embedding_dim=48, embedding_model="m-48")
    vec48 = "[" + ",".join(["0.1"] * 48) + "]"
    with psycopg.connect(empty_db_url, autocommit=True) as conn:
        assert _column_type(conn) == "vector(48)"  # one model, one dimension, until 0003
        conn.execute(_BELIEF.format(model_col="", model_val=""), ("old", "old", vec48))

    migrate.upgrade(empty_db_url)
    with psycopg.connect(empty_db_url, autocommit=True) as conn:
        meta = conn.execute("SELECT embedding_model, embedding_dim FROM memory_meta").fetchone()
        assert meta == ("m-48", 48)  # what the database was created for
        assert _column_type(conn) == "vector"  # any dimension now
        tag = conn.execute("SELECT embedding_model FROM beliefs WHERE content = 'old'").fetchone()
        assert tag == ("m-48",)  # existing vectors named after the recorded model
        conn.execute(
            _BELIEF.format(model_col=", embedding_model", model_val=", 'tiny'"),
            ("new", "new", "[1,0,0]"),
        )
        with pytest.raises(psycopg.errors.CheckViolation):  # a vector always names its model
            conn.execute(_BELIEF.format(model_col="", model_val=""), ("x", "x", "[1,0,0]"))

    migrate.downgrade(empty_db_url, "0002")
    with psycopg.connect(empty_db_url) as conn:
        assert _column_type(conn) == "vector(48)"
        rows = dict(conn.execute("SELECT content, embedding IS NOT NULL FROM beliefs").fetchall())
    assert rows == {"old": True, "new": False}  # the 3-d vector could not stay; its text did
    migrate.upgrade(empty_db_url)


def test_check_reports_drift(db_url: str) -> None:
    with psycopg.connect(db_url, autocommit=True) as conn:
        conn.execute("ALTER TABLE beliefs ADD COLUMN stray integer")
        conn.execute("DROP INDEX beliefs_user_key_idx")
    drift = migrate.check(db_url)
    assert any("stray" in d for d in drift)
    assert any("beliefs_user_key_idx" in d for d in drift)


def test_every_primary_key_and_index_leads_with_user_id(db_url: str) -> None:
    with psycopg.connect(db_url) as conn:
        rows = conn.execute(
            """
            SELECT i.indexrelid::regclass::text, t.relname, a.attname
            FROM pg_index i
            JOIN pg_class t ON t.oid = i.indrelid
            JOIN pg_namespace n ON n.oid = t.relnamespace
            JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = i.indkey[0]
            WHERE n.nspname = 'public' AND t.relname NOT IN ('mem01session_version', 'memory_meta')
            """
        ).fetchall()
    assert rows, "no indexes found"
    offenders = [(idx, table, col) for idx, table, col in rows if col != "user_id"]
    assert offenders == []


@pytest.mark.slow
def test_concurrent_upgrades_from_separate_processes_apply_once(empty_db_url: str) -> None:
    # Alembic keeps global state, so concurrency is between processes, as in production.
    code = (
        "import sys; from mem01session.db import migrate; "
        "migrate.upgrade(sys.argv[1], embedding_dim=16)"
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", code, empty_db_url], stderr=subprocess.PIPE)
        for _ in range(3)
    ]
    errors = [p.communicate(timeout=120)[1] for p in procs]  # reaps and closes the pipes
    results = [(p.returncode, err) for p, err in zip(procs, errors, strict=True)]
    assert [rc for rc, _ in results] == [0, 0, 0], results
    assert migrate.current(empty_db_url) == migrate.head_revision()
    with psycopg.connect(empty_db_url) as conn:
        assert conn.execute("SELECT count(*) FROM memory_meta").fetchone() == (1,)


def test_history_lists_head() -> None:
    revs = migrate.history()
    assert revs[-1].is_head
    assert revs[0].down_revision is None
    assert revs[-1].revision == migrate.head_revision()


def test_unknown_revision_is_a_clear_error(empty_db_url: str) -> None:
    with pytest.raises(Exception, match="nope"):
        migrate.upgrade(empty_db_url, "nope")


ID_TABLES = ("beliefs", "belief_events", "belief_sources", "memory_jobs")


def _id_columns(url: str) -> set[tuple[str, str, str | None]]:
    """(table, identity kind, default) of every id column."""
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT c.relname, a.attidentity, pg_get_expr(d.adbin, d.adrelid) FROM pg_attribute a "
            "JOIN pg_class c ON c.oid = a.attrelid LEFT JOIN pg_attrdef d "
            "ON d.adrelid = a.attrelid AND d.adnum = a.attnum "
            "WHERE a.attname = 'id' AND c.relname = ANY(%s)",
            (list(ID_TABLES),),
        ).fetchall()
    return {
        (str(t), str(kind), None if default is None else str(default)) for t, kind, default in rows
    }


def _new_ids(url: str, user: str) -> dict[str, int]:
    with psycopg.connect(url, autocommit=True) as conn:
        return {
            table: int(row[0])
            for table, statement in (
                (
                    "beliefs",
                    "INSERT INTO beliefs (user_id, content, norm_content) VALUES (%s, 'x', 'x')",
                ),
                ("belief_events", "INSERT INTO belief_events (user_id, op) VALUES (%s, 'ADD')"),
                (
                    "belief_sources",
                    "INSERT INTO belief_sources (user_id, belief_id) VALUES (%s, 1)",
                ),
                (
                    "memory_jobs",
                    "INSERT INTO memory_jobs (user_id, session_id, payload, idempotency_key) "
                    "VALUES (%s, 's', '{}', gen_random_uuid()::text)",
                ),
            )
            if (row := conn.execute(statement + " RETURNING id", (user,)).fetchone())
        }


def test_ids_come_from_sequences_from_revision_0005(empty_db_url: str) -> None:
    url = empty_db_url
    migrate.upgrade(url, "0004", embedding_dim=8)
    assert {kind for _, kind, _ in _id_columns(url)} == {"a"}  # identity columns until 0005
    first = _new_ids(url, "u")
    second = _new_ids(url, "u")
    with psycopg.connect(url, autocommit=True) as conn:
        for table in ID_TABLES:  # the newest rows go: their ids must not come back
            conn.execute(f"DELETE FROM {table} WHERE id = %s", (second[table],))

    migrate.upgrade(url)
    assert _id_columns(url) == {(t, "", f"nextval('{t}_id_seq'::regclass)") for t in ID_TABLES}
    assert migrate.check(url) == []
    third = _new_ids(url, "u")
    assert all(third[t] > second[t] > first[t] for t in ID_TABLES), (first, second, third)

    migrate.downgrade(url, "0004")
    assert {kind for _, kind, _ in _id_columns(url)} == {"a"}
    fourth = _new_ids(url, "u")
    assert all(fourth[t] > third[t] for t in ID_TABLES)


def test_revision_0008_links_the_near_duplicates_already_stored(empty_db_url: str) -> None:
    migrate.upgrade(empty_db_url, "0007", embedding_dim=3, embedding_model="m3")
    insert = _BELIEF.format(model_col=", embedding_model", model_val=", %s")
    rows = (
        ("lives in lyon", "[1,0,0]"),
        ("resides in lyon", "[0.99,0.1,0]"),  # cosine 0.995 with the first
        ("collects stamps", "[0,0,1]"),
        ("says nothing", "[0,0,0]"),  # a zero vector is near nothing
    )
    ids = []
    with psycopg.connect(empty_db_url, autocommit=True) as conn:
        for content, vec in rows:
            found = conn.execute(insert + " RETURNING id", (content, content, vec, "m3"))
            ids.append(found.fetchone()[0])  # type: ignore[index]
    migrate.upgrade(empty_db_url)
    with psycopg.connect(empty_db_url) as conn:
        links = set(conn.execute("SELECT belief_id, twin_id FROM belief_twins").fetchall())
    assert links == {(ids[0], ids[1]), (ids[1], ids[0])}


def test_revision_0009_keeps_the_episodes_found_by_their_words_and_undoes_cleanly(
    empty_db_url: str,
) -> None:
    migrate.upgrade(empty_db_url, "0008", embedding_dim=3, embedding_model="m3")
    with psycopg.connect(empty_db_url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO episodes (user_id, session_id, job_id, message, role, content, said_at) "
            "VALUES ('u', 's', 1, 0, 'user', 'Lisbon, since May.', now())"
        )
    migrate.upgrade(empty_db_url)
    assert migrate.check(empty_db_url) == []
    lisbon = "SELECT count(*) FROM episodes WHERE tsv @@ to_tsquery('english', %s)"
    with psycopg.connect(empty_db_url, autocommit=True) as conn:
        assert conn.execute(lisbon, ("lisbon:A",)).fetchone() == (1,)  # the user's own words
        conn.execute(
            "INSERT INTO episodes (user_id, session_id, job_id, message, role, content, context, "
            "said_at) VALUES ('u', 's', 2, 0, 'user', 'Porto.', 'Where do you live?', now())"
        )
        conn.execute("INSERT INTO episode_terms VALUES ('u', 'live', 1), ('u', 'porto', 1)")
        assert conn.execute(lisbon, ("live",)).fetchone() == (1,)
        assert conn.execute(lisbon, ("live:A",)).fetchone() == (0,)  # context: weight D
    migrate.downgrade(empty_db_url, "0008")
    with psycopg.connect(empty_db_url) as conn:
        assert conn.execute(lisbon, ("live",)).fetchone() == (0,)
        terms = dict(conn.execute("SELECT lexeme, episodes FROM episode_terms").fetchall())
    assert terms == {"lisbon": 1, "sinc": 1, "may": 1, "porto": 1}  # recounted: no "live"
    migrate.upgrade(empty_db_url)
    assert migrate.check(empty_db_url) == []


def test_revision_0012_indexes_the_vectors_of_every_model_the_episodes_hold_and_undoes_cleanly(
    empty_db_url: str,
) -> None:
    migrate.upgrade(empty_db_url, "0011", embedding_dim=3, embedding_model="m3")
    with psycopg.connect(empty_db_url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO episodes (user_id, session_id, job_id, message, role, content, said_at, "
            "embedding, embedding_model) VALUES ('u', 's', 1, 0, 'user', 'Lisbon.', now(), "
            "'[1,0,0,0,0]', 'other: it''s five')"
        )
    migrate.upgrade(empty_db_url)
    assert migrate.check(empty_db_url) == []
    made = {
        (i.model, i.dim): i.name for i in (VectorIndex("m3", 3), VectorIndex("other: it's five", 5))
    }
    listed = "SELECT relname FROM pg_class WHERE relname LIKE 'episodes_vectors_%' ORDER BY 1"
    with psycopg.connect(empty_db_url) as conn:
        assert [r[0] for r in conn.execute(listed)] == sorted(made.values())
    migrate.downgrade(empty_db_url, "0011")
    with psycopg.connect(empty_db_url) as conn:
        assert conn.execute(listed).fetchall() == []


def test_revision_0013_lets_the_ledger_record_imports_and_undoing_it_deletes_those_rows(
    empty_db_url: str,
) -> None:
    record = (
        "INSERT INTO belief_events (user_id, op, after) VALUES ('u', %s, '{\"digest\": \"d\"}')"
    )
    migrate.upgrade(empty_db_url, "0012", embedding_dim=3, embedding_model="m3")
    with psycopg.connect(empty_db_url, autocommit=True) as conn:
        with pytest.raises(psycopg.errors.CheckViolation):
            conn.execute(record, ("IMPORT",))
        conn.execute(record, ("ADD",))
    migrate.upgrade(empty_db_url)
    assert migrate.check(empty_db_url) == []
    with psycopg.connect(empty_db_url, autocommit=True) as conn:
        conn.execute(record, ("IMPORT",))
    migrate.downgrade(empty_db_url, "0012")
    with psycopg.connect(empty_db_url) as conn:
        ops = [r[0] for r in conn.execute("SELECT op FROM belief_events ORDER BY id")]
    assert ops == ["ADD"]


def test_a_role_that_may_not_create_the_extensions_is_told_what_to_do(
    pg_admin_url: str, empty_db_url: str
) -> None:
    role = f"r_{uuid.uuid4().hex[:10]}"
    name = urlsplit(empty_db_url).path.lstrip("/")
    with psycopg.connect(pg_admin_url, autocommit=True) as conn:
        conn.execute(f'CREATE ROLE "{role}" LOGIN')
        conn.execute(f'REVOKE CREATE ON DATABASE "{name}" FROM PUBLIC')
    parts = urlsplit(empty_db_url)
    where = f"{parts.hostname}:{parts.port}" if parts.port else (parts.hostname or "")
    as_role = urlunsplit(parts._replace(netloc=f"{role}@{where}"))  # its host kept (Citus)
    try:
        with pytest.raises(DatabaseError, match=r"GRANT CREATE ON SCHEMA public TO it"):
            migrate.upgrade(as_role)
        with psycopg.connect(empty_db_url, autocommit=True) as conn:
            conn.execute(f'GRANT CREATE ON SCHEMA public TO "{role}"')
        with psycopg.connect(empty_db_url) as conn:  # a Citus cluster's database has it
            vector = conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'")
            has_vector = vector.fetchone() is not None
        if not has_vector:  # even the database's owner may not create it (not trusted)
            with psycopg.connect(pg_admin_url, autocommit=True) as conn:
                conn.execute(f'ALTER DATABASE "{name}" OWNER TO "{role}"')
            with pytest.raises(DatabaseError, match="pgvector is not a trusted extension"):
                migrate.upgrade(as_role)
        assert migrate.current(empty_db_url) is None  # nothing was made
    finally:
        with psycopg.connect(empty_db_url, autocommit=True) as conn:  # Citus: on every node
            conn.execute(f'REVOKE ALL ON SCHEMA public FROM "{role}"')
        with psycopg.connect(pg_admin_url, autocommit=True) as conn:
            conn.execute(f'ALTER DATABASE "{name}" OWNER TO CURRENT_USER')
            conn.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
            conn.execute(f'DROP ROLE "{role}"')  # its grant went with the database


def test_a_server_without_pgvector_is_told_where_to_get_it() -> None:
    failure = 'NotSupportedError: extension "vector" is not available'
    assert "install pgvector on the PostgreSQL server" in migrate._setup_hint(failure)
    assert migrate._setup_hint("OperationalError: connection refused") == ""
    btree = 'InsufficientPrivilege: permission denied to create extension "btree_gin"'
    assert "grant this role CREATE on the database" in migrate._setup_hint(btree)


def test_an_upgrade_a_reader_blocks_stops_and_says_why_instead_of_waiting(
    empty_db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """It waited without a word, and every later statement on the table queued behind it."""
    migrate.upgrade(empty_db_url, "0014", embedding_dim=8)
    monkeypatch.setattr(migrate, "LOCK_TIMEOUT_MS", 200)
    with psycopg.connect(empty_db_url) as reader:  # a transaction left open on episodes
        reader.execute("SELECT count(*) FROM episodes").fetchone()
        with pytest.raises(DatabaseError, match="another session held a lock on a table"):
            migrate.upgrade(empty_db_url)
        reader.rollback()
    assert migrate.current(empty_db_url) == "0014"  # nothing was changed
    assert migrate.upgrade(empty_db_url) == migrate.head_revision()
