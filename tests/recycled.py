"""Test databases handed back after a test and made like the template again.

Cloning the migrated template and dropping the clone cost the server about a tenth of a
second of CPU per test (``CREATE DATABASE`` copies every block of the template through
the WAL), some hundreds of times per run. A test's database is instead handed back to
its worker's pool: nobody connected any more, the same schema as the template (tables,
columns, constraints, indexes, triggers, functions, grants, settings: a fingerprint of
the catalog), and the template's rows in the tables that have any. Then the tables the
test wrote to are truncated (new, empty files, as in a fresh clone), every sequence is
set back, and so is what the planner knows (statistics an ``ANALYZE`` gathered, the sizes
a ``TRUNCATE`` resets); the next test of that worker gets it. Anything else (a test that
created an index or a table, changed a grant or a row the template holds, left a prepared
transaction or a connection that will not go) and the database is dropped, as before.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import psycopg
from psycopg import sql

from tests.pg import create_database, drop_database, with_database

USER_SCHEMAS = "n.nspname NOT LIKE 'pg\\_%' AND n.nspname <> 'information_schema'"

# What a database holds besides its rows, one line per object, hashed.
FINGERPRINT = f"""
SELECT md5(string_agg(line, E'\\n' ORDER BY line)) FROM (
  SELECT 'schema ' || n.nspname || ' ' || coalesce(n.nspacl::text, '')
    FROM pg_namespace n WHERE {USER_SCHEMAS}
  UNION ALL
  SELECT 'rel ' || c.oid::regclass::text || ' ' || c.relkind::text || c.relpersistence::text
         || c.relrowsecurity::text || ' ' || coalesce(c.relacl::text, '') || ' '
         || coalesce(c.reloptions::text, '')
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE {USER_SCHEMAS}
  UNION ALL
  SELECT 'col ' || a.attrelid::regclass::text || '.' || a.attname || ' '
         || format_type(a.atttypid, a.atttypmod) || ' ' || a.attnotnull::text || ' '
         || coalesce(pg_get_expr(d.adbin, d.adrelid), '')
    FROM pg_attribute a
    JOIN pg_class c ON c.oid = a.attrelid
    JOIN pg_namespace n ON n.oid = c.relnamespace
    LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
   WHERE {USER_SCHEMAS} AND a.attnum > 0 AND NOT a.attisdropped
  UNION ALL
  SELECT 'con ' || k.conrelid::regclass::text || ' ' || k.conname || ' '
         || pg_get_constraintdef(k.oid)
    FROM pg_constraint k JOIN pg_namespace n ON n.oid = k.connamespace WHERE {USER_SCHEMAS}
  UNION ALL
  SELECT 'index ' || pg_get_indexdef(i.indexrelid)
    FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
    JOIN pg_namespace n ON n.oid = c.relnamespace WHERE {USER_SCHEMAS}
  UNION ALL
  SELECT 'trigger ' || t.tgrelid::regclass::text || ' ' || t.tgname || ' ' || t.tgenabled::text
    FROM pg_trigger t WHERE NOT t.tgisinternal
  UNION ALL
  SELECT 'function ' || p.oid::regprocedure::text || ' ' || md5(coalesce(p.prosrc, ''))
         || ' ' || coalesce(p.proacl::text, '') || ' ' || coalesce(p.proconfig::text, '')
    FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE {USER_SCHEMAS}
  UNION ALL
  SELECT 'type ' || t.oid::regtype::text
    FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace WHERE {USER_SCHEMAS}
  UNION ALL
  SELECT 'extension ' || extname || ' ' || extversion FROM pg_extension
  UNION ALL
  SELECT 'policy ' || polrelid::regclass::text || ' ' || polname FROM pg_policy
  UNION ALL
  SELECT 'event trigger ' || evtname FROM pg_event_trigger
  UNION ALL
  SELECT 'setting ' || coalesce(s.setrole::regrole::text, '') || ' ' || s.setconfig::text
    FROM pg_db_role_setting s WHERE s.setdatabase =
      (SELECT oid FROM pg_database WHERE datname = current_database())
  UNION ALL
  SELECT 'database ' || coalesce(datacl::text, '') || ' ' || datconnlimit::text || ' '
         || datallowconn::text
    FROM pg_database WHERE datname = current_database()
) AS catalog(line)
"""

TABLES = f"""
SELECT c.oid::regclass::text, pg_relation_size(c.oid) > 0
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE {USER_SCHEMAS} AND c.relkind IN ('r', 'p')
 ORDER BY 1
"""

RELATION_STATS = f"""
SELECT n.nspname, c.relname, c.relpages, c.reltuples, c.relallvisible
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE {USER_SCHEMAS} AND c.relkind IN ('r', 'p', 'i', 'm', 't')
"""

COLUMN_STATS = f"""
SELECT n.nspname, c.relname, a.attname, s.stainherit
  FROM pg_statistic s
  JOIN pg_class c ON c.oid = s.starelid
  JOIN pg_namespace n ON n.oid = c.relnamespace
  JOIN pg_attribute a ON a.attrelid = s.starelid AND a.attnum = s.staattnum
 WHERE {USER_SCHEMAS}
"""

SEQUENCES = """
SELECT format('%I.%I', schemaname, sequencename), start_value, last_value
  FROM pg_sequences ORDER BY 1
"""


def _rows_digest(conn: psycopg.Connection[tuple[object, ...]], table: str) -> str:
    query = sql.SQL("SELECT md5(coalesce(string_agg(t::text, '|' ORDER BY t::text), '')) FROM {} t")
    [row] = conn.execute(query.format(sql.SQL(table))).fetchall()
    return str(row[0])


@dataclass
class _Template:
    fingerprint: str
    rows: dict[str, str]  # table holding rows in the template -> digest of them
    sequences: dict[str, tuple[int, int | None]]  # -> start value, last value
    relation_stats: set[tuple[str, str, int, float, int]]  # the planner's sizes
    column_stats: int  # rows of pg_statistic (ANALYZE's)


@dataclass
class Recycler:
    """One worker's clones of ``template``: :meth:`take` one, :meth:`give_back` it."""

    admin_url: str
    template: str
    _spare: list[str] = field(default_factory=list)
    _state: _Template | None = None

    def take(self) -> str:
        if self._spare:
            return self._spare.pop()
        return create_database(self.admin_url, template=self.template)

    def give_back(self, name: str) -> None:
        clean = self._reset(name)
        if clean:
            self._spare.append(name)
        else:
            drop_database(self.admin_url, name)

    def close(self) -> None:
        while self._spare:
            drop_database(self.admin_url, self._spare.pop())

    def _template(self) -> _Template:
        if self._state is None:
            with psycopg.connect(with_database(self.admin_url, self.template)) as conn:
                [(fingerprint,)] = conn.execute(FINGERPRINT).fetchall()
                tables = conn.execute(TABLES).fetchall()
                rows = {t: _rows_digest(conn, t) for t, written in tables if written}
                sequences = {s: (start, last) for s, start, last in conn.execute(SEQUENCES)}
                relation_stats = set(conn.execute(RELATION_STATS).fetchall())
                column_stats = len(conn.execute(COLUMN_STATS).fetchall())
            self._state = _Template(str(fingerprint), rows, sequences, relation_stats, column_stats)
        return self._state

    def _reset(self, name: str) -> bool:
        """Make ``name`` like the template again; False where that cannot be done here."""
        template = self._template()
        with psycopg.connect(self.admin_url, autocommit=True) as admin:
            admin.execute(
                "SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity "
                "WHERE datname = %s AND pid <> pg_backend_pid()",
                (name,),
            )
            [(left,)] = admin.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = %s", (name,)
            ).fetchall()
            [(prepared,)] = admin.execute(
                "SELECT count(*) FROM pg_prepared_xacts WHERE database = %s", (name,)
            ).fetchall()
        if left or prepared:
            return False
        with psycopg.connect(with_database(self.admin_url, name)) as conn:
            [(fingerprint,)] = conn.execute(FINGERPRINT).fetchall()
            if fingerprint != template.fingerprint:
                return False
            written = [t for t, used in conn.execute(TABLES).fetchall() if used]
            for table, digest in template.rows.items():
                if _rows_digest(conn, table) != digest:
                    return False
            emptied = [t for t in written if t not in template.rows]
            if emptied:
                conn.execute(
                    sql.SQL("TRUNCATE {}").format(sql.SQL(", ").join(sql.SQL(t) for t in emptied))
                )
            for sequence, (start, last) in template.sequences.items():
                if last is None:
                    conn.execute("SELECT setval(%s, %s, false)", (sequence, start))
                else:
                    conn.execute("SELECT setval(%s, %s, true)", (sequence, last))
            # What the planner knows of sizes and values (an ANALYZE the test ran, the
            # index sizes a TRUNCATE resets) as in the template: plans as in a fresh clone.
            analyzed = conn.execute(COLUMN_STATS).fetchall()
            if analyzed and template.column_stats:
                return False
            for schema, relation, column, inherited in analyzed:
                conn.execute(
                    "SELECT pg_clear_attribute_stats(%s, %s, %s, %s)",
                    (schema, relation, column, inherited),
                )
            now = set(conn.execute(RELATION_STATS).fetchall())
            for schema, relation, pages, tuples, visible in template.relation_stats - now:
                conn.execute(
                    "SELECT pg_restore_relation_stats('schemaname', %s::text, 'relname', "
                    "%s::text, 'relpages', %s::integer, 'reltuples', %s::real, "
                    "'relallvisible', %s::integer)",
                    (schema, relation, pages, tuples, visible),
                )
            if set(conn.execute(RELATION_STATS).fetchall()) != template.relation_stats:
                return False
            conn.commit()
        return True
