from __future__ import annotations

import os
import platform
import socket
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")
# Tests never reach a real API, whatever the developer's shell holds.
for _var in ("OPENAI_API_KEY", "MEM01_DATABASE_URL", "DATABASE_URL", "OPENAI_BASE_URL"):
    os.environ.pop(_var, None)

from mem01session.db import Database, migrate  # noqa: E402
from mem01session.embeddings import HashingEmbedder  # noqa: E402
from tests.pg import create_database, drop_database, test_server, with_database  # noqa: E402
from tests.recycled import Recycler  # noqa: E402
from tests.spawns import started_during, watch  # noqa: E402

TEST_DIM = 64


def pytest_configure(config: pytest.Config) -> None:
    """Compile the project's modules once, before any test starts a process: the suite
    starts hundreds of Python processes (crash children, scripts, the CLI, the README's
    examples), and where bytecode is not written (``PYTHONDONTWRITEBYTECODE``, common in
    CI images) each would otherwise compile the whole package again, about half a second
    apiece. Only the controlling process does it; up-to-date files are left alone."""
    # The OpenAI client names the machine's processor in its headers, which Python learns
    # by running `uname -p` once per process: learnt here, it is no test's started process
    # (the first test of a process to make a client was failed by the spawn audit).
    platform.processor()
    if hasattr(config, "workerinput"):  # a pytest-xdist worker: the controller did it
        return
    import compileall

    root = Path(__file__).resolve().parent.parent
    for folder in (root / "src", root / "tests"):
        if folder.is_dir():
            compileall.compile_dir(folder, quiet=2, workers=0)


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: two workers per core. A test here spends about half its time waiting
    (on PostgreSQL, on the processes it starts), so one worker per core leaves the cores
    idle half the time (compare ``-n 2`` and ``-n 4`` on a machine of 2 cores)."""
    return 2 * (os.cpu_count() or 1)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests marked slow (processes, servers: seconds each) first, in their order: the
    suite's workers start on them and share the short ones at the end, instead of one
    worker starting a long test when the others are nearly done."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


@pytest.fixture(autouse=True)
def starts_processes_only_if_slow(request: pytest.FixtureRequest) -> Iterator[None]:
    """A test that starts a process (a script, the CLI, a server, a browser, the embedding
    model's process) is marked slow, so that the quick subset starts none. Set
    ``MEM01_SPAWN_AUDIT`` to a file to list such tests there instead of failing them."""
    watch()
    with started_during() as started:
        yield
    if not started or request.node.get_closest_marker("slow") is not None:
        return
    audit = os.environ.get("MEM01_SPAWN_AUDIT")
    if audit:
        with open(audit, "a") as out:
            out.write(f"{request.node.nodeid}\t{' '.join(sorted(set(started)))}\n")
        return
    pytest.fail(
        f"started {', '.join(sorted(set(started)))} without being marked slow "
        "(@pytest.mark.slow): the quick subset starts no process"
    )


@pytest.fixture(autouse=True)
def fresh_consoles() -> Iterator[None]:
    """Each test's CLI output at its own width: a command's consoles are made once per
    process (one command per process in real use), at the width of the first to print."""
    from mem01session.cli._console import console, err_console

    console.cache_clear()
    err_console.cache_clear()
    yield
    console.cache_clear()
    err_console.cache_clear()


@pytest.fixture(scope="session")
def pg_admin_url() -> Iterator[str]:
    with test_server() as url:
        yield url


@pytest.fixture(scope="session")
def template_db(pg_admin_url: str) -> Iterator[str]:
    """A database migrated to head once per run; each test clones it."""
    name = create_database(pg_admin_url)
    migrate.upgrade(
        with_database(pg_admin_url, name),
        embedding_dim=TEST_DIM,
        embedding_model=HashingEmbedder(TEST_DIM).name,
    )
    yield name
    drop_database(pg_admin_url, name)


@pytest.fixture
def empty_db_url(pg_admin_url: str) -> Iterator[str]:
    """A fresh, empty database (no schema)."""
    name = create_database(pg_admin_url)
    yield with_database(pg_admin_url, name)
    drop_database(pg_admin_url, name)


@pytest.fixture(scope="session")
def recycler(pg_admin_url: str, template_db: str) -> Iterator[Recycler]:
    pool = Recycler(pg_admin_url, template_db)
    yield pool
    pool.close()


@pytest.fixture
def db_url(pg_admin_url: str, recycler: Recycler) -> Iterator[str]:
    """A database just like a fresh clone of the template (at head, built for
    :data:`TEST_DIM`-d offline vectors): see :mod:`tests.recycled`."""
    name = recycler.take()
    yield with_database(pg_admin_url, name)
    recycler.give_back(name)


@pytest.fixture
def embedder() -> HashingEmbedder:
    return HashingEmbedder(TEST_DIM)


@pytest.fixture
async def db(db_url: str, embedder: HashingEmbedder) -> AsyncIterator[Database]:
    database = await Database.open(
        url=db_url, embedding_model=embedder.name, embedding_dim=embedder.dim
    )
    yield database
    await database.close()


@pytest.fixture
def fresh_notices() -> Iterator[None]:
    """Notices (offline fallbacks and the like) are logged once per process: a test that
    checks one starts as if none had been logged yet."""
    from mem01session.logs import forget_notices

    forget_notices()
    yield
    forget_notices()


@pytest.fixture(autouse=True)
def fresh_placements() -> Iterator[None]:
    """A placement a server refused is remembered per process and model: every test starts
    as if no server had refused one."""
    from mem01session.session.placement import forget_refusals

    forget_refusals()
    yield
    forget_refusals()


@pytest.fixture
def silent_server() -> Iterator[tuple[int, list[socket.socket]]]:
    """A port whose server takes connections and never says a word (a hung PostgreSQL, or
    a proxy in front of one that is down); the connections it took."""
    listener = socket.create_server(("127.0.0.1", 0))
    taken: list[socket.socket] = []

    def serve() -> None:
        while True:
            try:
                taken.append(listener.accept()[0])
            except OSError:  # closed: the test is over
                return

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield listener.getsockname()[1], taken
    listener.shutdown(socket.SHUT_RDWR)  # wakes the accept() it waits in (close() does not)
    listener.close()
    thread.join(timeout=5)
    for conn in taken:
        conn.close()
