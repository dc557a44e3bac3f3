"""``mem01session --help`` starts fast because it imports nothing heavy (issue 14, finding 9).

What is checked is what gets imported, in a fresh interpreter: a timing assertion would
be flaky, and the figures live in the report of the change that made startup lazy.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from importlib.metadata import version

import pytest

import mem01session

pytestmark = pytest.mark.slow  # starts processes (see tests/spawns.py)

HEAVY = ("sqlalchemy", "alembic", "agents", "openai", "psycopg", "psycopg_pool", "pgvector")

# Runs the command line (its Typer app) with ARGS, then prints which heavy packages got
# imported. (The console entry point, main(), ends the process itself.)
PROBE = """
import json, sys
sys.argv = ["mem01session", *json.loads(sys.argv[1])]
from mem01session.cli import app
try:
    app()
except SystemExit:
    pass
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in HEAVY)))
"""


def loaded_after(args: list[str]) -> list[str]:
    code = PROBE.replace("HEAVY", repr(HEAVY))
    proc = subprocess.run(
        [sys.executable, "-c", code, json.dumps(args)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return list(json.loads(proc.stdout.splitlines()[-1]))


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        [],  # no command: the help, too
        ["db", "--help"],
        ["db", "downgrade", "--help"],
        ["beliefs", "list", "--help"],
        ["recall", "--help"],
        ["erase", "--help"],
        ["reinstate", "--help"],
        ["jobs", "retry", "--help"],
        ["demo", "--help"],
    ],
)
def test_help_imports_no_heavy_package(args: list[str]) -> None:
    assert loaded_after(args) == []


def test_the_probe_sees_heavy_imports() -> None:
    """The check above can fail: a command that runs does import them."""
    loaded = loaded_after(["db", "history"])
    assert "alembic" in loaded and "sqlalchemy" in loaded


def test_public_names_are_imported_on_first_use() -> None:
    code = (
        "import sys, mem01session\n"
        "assert 'sqlalchemy' not in sys.modules and 'agents' not in sys.modules\n"
        "from mem01session import Memory, Mem01Session, Settings\n"
        "print(Memory.__module__, Mem01Session.__module__, Settings.__module__)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == [
        "mem01session.memory.memory",
        "mem01session.session.session",
        "mem01session.config",
    ]


def test_every_public_name_resolves() -> None:
    assert sorted(mem01session.__all__) == sorted(mem01session._HOMES)
    for name in mem01session.__all__:
        assert getattr(mem01session, name).__name__ == name
        assert name in dir(mem01session)
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = mem01session.nope  # type: ignore[attr-defined]


# What a command that only reads memory must not load: the tokenizer (seconds), the Agents
# SDK and the OpenAI client (a second), Alembic (tenths). Counting tokens (recall) loads
# the tokenizer, and that is all.
NOT_FOR_READING = ("bpe_openai", "tiktoken", "agents", "openai", "alembic")


def loaded_by_command(
    args: list[str], env: dict[str, str], heavy: tuple[str, ...] = NOT_FOR_READING
) -> list[str]:
    code = PROBE.replace("HEAVY", repr(heavy))
    proc = subprocess.run(
        [sys.executable, "-c", code, json.dumps(args)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    return list(json.loads(proc.stdout.splitlines()[-1]))


async def _seed(url: str) -> None:
    from mem01session.db import Database
    from mem01session.embeddings import HashingEmbedder
    from mem01session.engine import BeliefEngine, Utterance
    from mem01session.engine.ops import Op, Provenance
    from tests.conftest import TEST_DIM

    embedder = HashingEmbedder(TEST_DIM)
    async with await Database.open(
        url, embedding_model=embedder.name, embedding_dim=embedder.dim
    ) as db:
        await BeliefEngine(db, embedder).apply(
            "alice",
            [Op.add("Lives in Lisbon", evidence="I live in Lisbon.")],
            provenance=Provenance(session_id="c1", job_id=1, extractor="test"),
            utterances=[Utterance(0, "user", "I live in Lisbon.")],
        )


@pytest.fixture
def reading_env(db_url: str) -> dict[str, str]:
    """A database holding one user (alice: a belief and an episode) for the commands."""
    from mem01session.embeddings import HashingEmbedder
    from tests.conftest import TEST_DIM

    asyncio.run(_seed(db_url))
    env = dict(os.environ)
    env["MEM01_DATABASE_URL"] = db_url
    env["MEM01_EMBEDDING_MODEL"] = HashingEmbedder(TEST_DIM).name
    return env


@pytest.mark.parametrize(
    "args",
    [
        ["beliefs", "list", "--user", "alice"],  # every inspector command opens the same way
        ["users"],
        ["db", "current"],
    ],
)
def test_reading_commands_load_no_tokenizer_sdk_or_alembic(
    reading_env: dict[str, str], args: list[str]
) -> None:
    assert loaded_by_command(args, reading_env) == []


# What the inspector commands (which only read) also do without (issue 27): SQLAlchemy
# with its ORM, NumPy (only a vector needs it; pgvector's adapters import it) and the
# embedders' runtimes. They call the engine's reads on a psycopg pool (cli/_reads.py).
NOT_FOR_INSPECTING = (
    *NOT_FOR_READING,
    "sqlalchemy",
    "numpy",
    "pgvector",
    "onnxruntime",
    "tokenizers",
)


@pytest.mark.parametrize(
    "args",
    [
        ["beliefs", "list", "--user", "alice"],
        ["beliefs", "show", "1", "--user", "alice"],
        ["beliefs", "history", "--user", "alice"],
        ["episodes", "list", "--user", "alice"],
        ["users"],
        ["jobs", "list"],
        ["jobs", "list", "--user", "alice"],
        ["db", "current"],
    ],
)
def test_inspector_commands_load_no_sqlalchemy_or_numpy(
    reading_env: dict[str, str], args: list[str]
) -> None:
    assert loaded_by_command(args, reading_env, NOT_FOR_INSPECTING) == []


def test_the_inspector_probe_sees_sqlalchemy_and_numpy(reading_env: dict[str, str]) -> None:
    """The check above can fail: a command on the engine does load them."""
    loaded = loaded_by_command(["forget", "--user", "alice", "1"], reading_env, NOT_FOR_INSPECTING)
    assert "sqlalchemy" in loaded and "numpy" in loaded


def test_recall_loads_the_tokenizer_and_nothing_else_of_those(
    reading_env: dict[str, str],
) -> None:
    loaded = loaded_by_command(["recall", "--user", "alice", "where do I live?"], reading_env)
    assert loaded and {m.split(".")[0] for m in loaded} <= {"bpe_openai", "tiktoken"}


ENTRY = """
import atexit, json, sys
atexit.register(lambda: print("exit handlers ran", file=sys.stderr))
sys.argv = ["mem01session", *json.loads(sys.argv[1])]
from mem01session.cli import main

main()
print("never reached", file=sys.stderr)
"""


@pytest.mark.parametrize(
    ("args", "code", "out", "err"),
    [
        (["--version"], 0, f"mem01session {version('mem01session')}\n", ""),
        (["nope"], 1, "", "error: No such command 'nope'"),
    ],
)
def test_the_entry_point_ends_the_process_after_output_and_exit_handlers(
    args: list[str], code: int, out: str, err: str
) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", ENTRY, json.dumps(args)], capture_output=True, text=True
    )
    assert proc.returncode == code
    assert proc.stdout == out
    assert proc.stderr.startswith(err) and proc.stderr.endswith("exit handlers ran\n")
    assert "never reached" not in proc.stderr
