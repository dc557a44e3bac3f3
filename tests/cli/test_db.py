"""`mem01session db ...` against a real database."""

from __future__ import annotations

import subprocess
import sys

import pytest
from alembic.script import ScriptDirectory
from typer.testing import CliRunner

from mem01session.cli import app
from mem01session.db import migrate
from mem01session.db.versions import VERSION_TABLE

runner = CliRunner()


@pytest.fixture
def env(empty_db_url: str, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("MEM01_DATABASE_URL", empty_db_url)
    monkeypatch.setenv("COLUMNS", "200")  # wide tables: no wrapped cells in assertions
    return empty_db_url


def test_fresh_database_upgrade_current_check_history(env: str) -> None:
    result = runner.invoke(app, ["db", "current"])
    assert result.exit_code == 0, result.output
    assert "base" in result.output

    result = runner.invoke(app, ["db", "upgrade"])
    assert result.exit_code == 0, result.output
    head = migrate.head_revision()
    assert result.output.startswith("upgraded postgresql://")
    assert result.output.rstrip().endswith(f"from base to {head} (head)")

    # At the head already: nothing was done, and it says so.
    result = runner.invoke(app, ["db", "upgrade"])
    assert result.exit_code == 0, result.output
    assert result.output.rstrip().endswith(f"is already at {head} (head); nothing to do")

    result = runner.invoke(app, ["db", "current"])
    assert result.output.strip() == f"{head} (head)"

    result = runner.invoke(app, ["db", "check"])
    assert result.exit_code == 0 and "in sync" in result.output

    result = runner.invoke(app, ["db", "history"])
    assert result.exit_code == 0 and head in result.output
    rows = {line.split()[1]: line for line in result.output.splitlines() if "│ 000" in line}
    assert "drops every table" in rows["0001"]
    assert "loses no data" in rows["0002"]
    assert "drops column beliefs.embedding_model" in rows["0003"]

    result = runner.invoke(app, ["db", "downgrade", "base", "--yes"])
    assert result.exit_code == 0 and "base" in result.output
    assert migrate.current(env) is None


def test_upgrade_records_the_default_embedder(env: str) -> None:
    import psycopg

    assert runner.invoke(app, ["db", "upgrade"]).exit_code == 0
    with psycopg.connect(env) as conn:
        row = conn.execute("SELECT embedding_model, embedding_dim FROM memory_meta").fetchone()
    assert row == ("all-MiniLM-L6-v2", 384)  # the default embedder, with or without a key


def test_bad_embedding_dim_is_refused(env: str) -> None:
    result = runner.invoke(app, ["db", "upgrade", "--embedding-dim", "0"])
    assert result.exit_code == 1
    assert "--embedding-dim" in result.output
    assert migrate.current(env) is None


def test_unreachable_database_is_a_clean_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEM01_DATABASE_URL", "postgresql://u:cli-SENTINEL-pw@127.0.0.1:1/x")
    result = runner.invoke(app, ["db", "current"])
    assert result.exit_code == 1
    assert "error" in result.output
    assert "cli-SENTINEL-pw" not in result.output
    assert "Traceback" not in result.output


# -- downgrades that delete data need --yes; bad revisions (issue 14, finding 5) ---------


def one_error_line(output: str) -> str:
    lines = [line for line in output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), output
    assert "Traceback" not in output
    return lines[0]


def test_downgrade_to_base_needs_yes(env: str) -> None:
    assert runner.invoke(app, ["db", "upgrade", "--embedding-dim", "8"]).exit_code == 0
    head = migrate.head_revision()

    refused = runner.invoke(app, ["db", "downgrade", "base"])
    assert refused.exit_code == 1
    line = one_error_line(refused.output)
    initial = "0001 (Initial schema: beliefs, ledger, provenance, job outbox, users, meta)"
    assert f"{initial} drops every table" in line
    assert "0007 (Episodes: " in line and "drops tables episode_terms, episodes" in line
    assert line.endswith("; add --yes to confirm")
    assert migrate.current(env) == head  # nothing was undone

    result = runner.invoke(app, ["db", "downgrade", "base", "--yes"])
    assert result.exit_code == 0, result.output
    assert migrate.current(env) is None


def test_downgrade_that_only_drops_an_index_needs_no_yes(env: str) -> None:
    assert runner.invoke(app, ["db", "upgrade", "--embedding-dim", "8"]).exit_code == 0
    refused = runner.invoke(app, ["db", "downgrade", "0003"])  # 0004 drops a table, a column
    line = one_error_line(refused.output)
    assert refused.exit_code == 1 and "--yes" in line
    assert "0004 (Per-user term counts: " in line
    assert "drops table belief_terms and column memory_users.active_beliefs" in line
    assert "0006" not in line and "0005" not in line  # they lose nothing: not named
    refused = runner.invoke(app, ["db", "downgrade", "0002", "--yes"])  # 0003 drops a column
    assert refused.exit_code == 0, refused.output
    assert refused.output.strip() == (
        "downgraded to 0002 (undid 0015, 0014, 0013, 0012, 0011, 0010, 0009, 0008, 0007, 0006, "
        "0005, 0004, 0003)"
    )
    result = runner.invoke(app, ["db", "downgrade", "0002"])  # already there
    assert result.output.strip() == "the database is at 0002; nothing to undo"
    result = runner.invoke(app, ["db", "downgrade", "0001"])  # 0002 only drops an index
    assert result.exit_code == 0, result.output
    assert migrate.current(env) == "0001"
    # One more step (written as alembic's relative "-1") reaches base: refused.
    refused = runner.invoke(app, ["db", "downgrade", "-1"])
    assert refused.exit_code == 1
    assert "--yes" in one_error_line(refused.output)
    assert migrate.current(env) == "0001"


def test_empty_database_downgrade_to_base_has_nothing_to_confirm(env: str) -> None:
    result = runner.invoke(app, ["db", "downgrade", "base"])
    assert result.exit_code == 0, result.output


def test_the_migrations_that_delete_data_when_undone_are_known() -> None:
    """The rule behind --yes, applied to every shipped migration: a new migration whose
    downgrade drops a table or column joins this set (and this test says so)."""
    script = ScriptDirectory(str(migrate.migrations_dir()))
    lossy = {s.revision for s in script.walk_revisions() if migrate.deletes_data(s)}
    assert lossy == {"0001", "0003", "0004", "0007", "0008", "0009", "0010", "0011", "0013", "0014"}
    said = {s.revision: migrate.describe_loss(s) for s in script.walk_revisions()}
    assert said == {
        "0001": "drops every table",
        "0002": "",
        "0003": "drops column beliefs.embedding_model",
        "0004": "drops table belief_terms and column memory_users.active_beliefs",
        "0005": "",
        "0006": "",
        "0007": "drops tables episode_terms, episodes and columns belief_sources.episode_id, "
        "memory_users.episodes",
        "0008": "drops table belief_twins",
        "0009": "drops column episodes.context",
        "0010": "drops column memory_users.timezone",
        "0011": "drops column memory_jobs.notes",
        "0012": "",
        "0013": "deletes rows",
        "0014": "drops column episodes.embedding_bits",  # computed again by an upgrade
        "0015": "",
    }


@pytest.mark.slow
def test_the_head_is_read_without_alembic_and_agrees_with_it() -> None:
    script = ScriptDirectory(str(migrate.migrations_dir()))
    assert migrate.head_revision() == script.get_current_head()
    code = (
        "import sys\n"
        "from mem01session.db import migrate\n"
        "print(migrate.head_revision(), 'alembic' in sys.modules)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == [script.get_current_head(), "False"]


def test_current_reads_the_revision_as_alembic_does(env: str) -> None:
    assert migrate.current(env) is None
    migrate.upgrade(env, "0002", embedding_dim=8)
    from alembic.runtime.migration import MigrationContext
    from sqlalchemy import create_engine

    engine = create_engine(env.replace("postgresql://", "postgresql+psycopg://", 1))
    with engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"version_table": VERSION_TABLE})
        assert context.get_current_revision() == "0002"
    engine.dispose()
    assert migrate.current(env) == "0002"


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["db", "downgrade", "nonsense"], "cannot downgrade to 'nonsense'"),
        (["db", "upgrade", "0099", "--embedding-dim", "8"], "cannot upgrade to '0099'"),
        (["db", "downgrade", "-5"], "cannot downgrade to '-5'"),
    ],
)
def test_unknown_revision_is_one_line(env: str, args: list[str], expected: str) -> None:
    result = runner.invoke(app, args)
    assert result.exit_code == 1
    line = one_error_line(result.output)
    assert line.startswith(f"error: {expected}") and "revisions: base, 0001" in line
    assert migrate.current(env) is None


def test_db_url_masks_the_password_unless_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEM01_DATABASE_URL", "postgresql://mem01:S3cretPw9@db.internal:5432/m")
    masked = runner.invoke(app, ["db", "url"])
    assert masked.exit_code == 0, masked.output
    assert masked.output.strip() == "postgresql://mem01:***@db.internal:5432/m"
    shown = runner.invoke(app, ["db", "url", "--show-password"])
    assert shown.output.strip() == "postgresql://mem01:S3cretPw9@db.internal:5432/m"


def test_an_upgrade_to_a_revision_behind_the_database_says_to_downgrade(env: str) -> None:
    """It said "already at 0013; nothing to do" and exited 0."""
    migrate.upgrade(env, "0003", embedding_dim=8)
    result = runner.invoke(app, ["db", "upgrade", "0001", "--embedding-dim", "8"])
    assert result.exit_code == 1
    assert "is at 0003, past 0001" in result.output and "db downgrade 0001" in result.output
    assert migrate.current(env) == "0003"
