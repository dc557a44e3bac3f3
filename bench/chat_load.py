"""The chat example (``examples/chat``) under load, over HTTP on loopback:
``python -m bench chat``.

The app runs as people run it: ``uvicorn examples.chat.app:app --workers 2`` and
``mem01session worker``, on a database of its own. Simulated users (50 by default), each
in a conversation of their own, send their turns (10 each) one after another, waiting
0.5-1.5 s (seeded) after each answer; every answer is read as it streams. Measured per
turn: the time to the first streamed words. Then, once the worker has drained the queue,
every answered turn must be in memory exactly once (one episode each, none lost). The same
load runs against the same app without memory (``MEM01_CHAT_MEMORY=off``), and once more
with memory while the server is stopped with SIGTERM halfway and started again: the turns
it answered before and after must each be in memory once.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx2 as httpx
import psutil
import psycopg

from mem01session.db import migrate
from mem01session.embeddings import HashingEmbedder
from mem01session.shortterm import SessionManager

from .common import Server

ROOT = Path(__file__).resolve().parents[1]
EMBEDDER = HashingEmbedder(384)
START_TIMEOUT = 120.0
PLATFORM = "web"  # the example's (examples/chat/app.py): its users' memory is "web:<user>"
TOPICS = ("jazz", "hiking", "chess", "tea", "pottery", "sailing", "tennis", "opera", "tacos")


@dataclass
class ChatApp:
    """The example's two server processes and a worker, on ``db_url``."""

    db_url: str
    folder: Path
    memory: bool = True
    url: str = ""
    server: subprocess.Popen[bytes] | None = None
    worker: subprocess.Popen[bytes] | None = None
    env_extra: dict[str, str] = field(default_factory=dict)

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env |= {
            "MEM01_DATABASE_URL": self.db_url,
            "MEM01_EMBEDDING_MODEL": EMBEDDER.name,
            "MEM01_HOME": str(self.folder / "home"),
            "MEM01_CHAT_FOLDER": str(self.folder / "chats"),
            "MEM01_CHAT_MEMORY": "on" if self.memory else "off",
            "PYTHONPATH": os.pathsep.join(
                [str(ROOT / "src"), str(ROOT), env.get("PYTHONPATH", "")]
            ),
            "OPENAI_AGENTS_DISABLE_TRACING": "1",
        }
        env.pop("OPENAI_API_KEY", None)
        return env | self.env_extra

    def start(self) -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
        quiet = subprocess.DEVNULL
        if self.memory and (self.worker is None or self.worker.poll() is not None):
            self.worker = subprocess.Popen(
                [sys.executable, "-m", "mem01session", "worker"],
                env=self.env(),
                cwd=ROOT,
                stdout=quiet,
                stderr=quiet,
            )
        self.server = subprocess.Popen(
            [sys.executable, "-m", "uvicorn", "examples.chat.app:app", "--workers", "2",
             "--port", str(port)],
            env=self.env(), cwd=ROOT, stdout=quiet, stderr=quiet,
        )  # fmt: skip
        self.url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + START_TIMEOUT
        while True:  # a wait on the server's state
            if self.server.poll() is not None:
                raise RuntimeError("the chat app exited as it started")
            try:
                if httpx.get(self.url + "/", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("the chat app did not answer")

    def stop_server(self) -> None:
        """SIGTERM to uvicorn (what a deploy or a Ctrl+C sends), then wait for it."""
        if self.server is not None and self.server.poll() is None:
            self.server.send_signal(signal.SIGTERM)
            self.server.wait(timeout=120)

    def stop(self) -> None:
        self.stop_server()
        if self.worker is not None and self.worker.poll() is None:
            self.worker.send_signal(signal.SIGTERM)
            self.worker.wait(timeout=120)


@dataclass
class Load:
    """What one load run saw."""

    answered: list[tuple[str, str]] = field(default_factory=list)  # (memory user, text)
    first_words_ms: list[float] = field(default_factory=list)
    failed: int = 0
    seconds: float = 0.0
    server_cpu_s: float | None = None  # the uvicorn processes' CPU time during the load
    worker_cpu_s: float | None = None  # the extraction worker's, until the queue drained


def cpu_seconds(process: subprocess.Popen[bytes] | None) -> float:
    """User and system CPU time of ``process`` and its children so far."""
    if process is None or process.poll() is not None:
        return 0.0
    root = psutil.Process(process.pid)
    total = 0.0
    for each in [root, *root.children(recursive=True)]:
        try:
            times = each.cpu_times()
        except psutil.Error:
            continue
        total += times.user + times.system
    return total


def turn_text(user: int, turn: int) -> str:
    return f"Note {user}-{turn}: I like {TOPICS[(user + turn) % len(TOPICS)]}."


async def run_load(
    app: ChatApp, users: int, turns: int, *, think: tuple[float, float] = (0.5, 1.5),
    seed: int = 7, halfway: asyncio.Event | None = None, resumed: asyncio.Event | None = None,
) -> Load:  # fmt: skip
    """``users`` users × ``turns`` turns over HTTP; with ``halfway``, it is set when half the
    turns were sent, and the turns after it wait for ``resumed`` (the server restarted)."""
    out = Load()
    rng = random.Random(seed)
    pauses = [[rng.uniform(*think) for _ in range(turns)] for _ in range(users)]
    sent = 0
    started = time.perf_counter()

    async def user(n: int, client: httpx.AsyncClient) -> None:
        nonlocal sent
        name = f"load-{n:03d}"
        for t in range(turns):
            sent += 1
            if halfway is not None and sent > users * turns // 2:
                halfway.set()
                assert resumed is not None
                await resumed.wait()
            text = turn_text(n, t)
            asked = time.perf_counter()
            try:
                async with client.stream(
                    "POST", app.url + "/api/chat", json={"chat": f"chat-{n}", "text": text},
                    headers={"X-User": name}, timeout=60,
                ) as response:  # fmt: skip
                    response.raise_for_status()
                    first = None
                    async for chunk in response.aiter_text():
                        if first is None and chunk:
                            first = time.perf_counter()
                    if first is None:
                        raise RuntimeError("an empty answer")
                out.first_words_ms.append((first - asked) * 1000)
                out.answered.append((SessionManager.memory_user_id(PLATFORM, name), text))
            except (httpx.HTTPError, RuntimeError):
                out.failed += 1
            await asyncio.sleep(pauses[n][t])  # the user reads, then types (think time)

    async with httpx.AsyncClient(limits=httpx.Limits(max_connections=users)) as client:
        await asyncio.gather(*(user(n, client) for n in range(users)))
    out.seconds = time.perf_counter() - started
    return out


def drained(db_url: str, timeout: float = 300.0) -> None:
    """Wait until the worker has applied every recorded turn."""
    deadline = time.monotonic() + timeout
    with psycopg.connect(db_url, autocommit=True) as conn:
        while True:  # a wait on the queue's state
            row = conn.execute(
                "SELECT count(*) FROM memory_jobs WHERE status IN ('pending', 'running')"
            ).fetchone()
            if row is not None and row[0] == 0:
                return
            if time.monotonic() > deadline:
                raise RuntimeError("the worker did not drain the queue")


def stored(db_url: str) -> dict[tuple[str, str], int]:
    """(user, text) -> how many episodes hold it."""
    with psycopg.connect(db_url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT user_id, content, count(*) FROM episodes WHERE role = 'user' "
            "GROUP BY user_id, content"
        ).fetchall()
    return {(str(u), str(c)): int(n) for u, c, n in rows}


def exactly_once(load: Load, db_url: str) -> tuple[int, int, int]:
    """Of the answered turns: how many are stored once, lost, stored more than once."""
    found = stored(db_url)
    once = sum(1 for t in load.answered if found.get(t) == 1)
    lost = sum(1 for t in load.answered if t not in found)
    twice = sum(1 for t in load.answered if found.get(t, 0) > 1)
    return once, lost, twice


@dataclass
class ChatResult:
    users: int
    turns: int
    runs: dict[str, Load] = field(default_factory=dict)
    once: dict[str, tuple[int, int, int]] = field(default_factory=dict)


async def _sigterm_run(app: ChatApp, users: int, turns: int) -> Load:
    halfway, resumed = asyncio.Event(), asyncio.Event()
    load = asyncio.create_task(run_load(app, users, turns, halfway=halfway, resumed=resumed))
    await halfway.wait()
    await asyncio.to_thread(app.stop_server)  # in the middle of the load
    await asyncio.to_thread(app.start)
    resumed.set()
    return await load


def run(server: Server, users: int = 50, turns: int = 10) -> ChatResult:
    """All three runs, each on a database of its own on ``server``."""
    out = ChatResult(users, turns)
    for name in ("with memory", "without memory", "with memory, SIGTERM halfway"):
        db_url = server.database("chat_" + name.split(",")[0].replace(" ", "_"))
        migrate.upgrade(db_url, embedding_dim=EMBEDDER.dim, embedding_model=EMBEDDER.name)
        with tempfile.TemporaryDirectory(prefix="mem01-chat-") as folder:
            app = ChatApp(db_url, Path(folder), memory=name != "without memory")
            app.start()
            try:
                if "SIGTERM" in name:
                    load = asyncio.run(_sigterm_run(app, users, turns))
                else:
                    served, worked = cpu_seconds(app.server), cpu_seconds(app.worker)
                    load = asyncio.run(run_load(app, users, turns))
                    load.server_cpu_s = cpu_seconds(app.server) - served
                if app.memory:
                    drained(db_url)
                    out.once[name] = exactly_once(load, db_url)
                    if "SIGTERM" not in name:
                        load.worker_cpu_s = cpu_seconds(app.worker) - worked
            finally:
                app.stop()
        out.runs[name] = load
    return out


def _pct(samples: list[float], q: int) -> float:
    if len(samples) < 2:
        return samples[0] if samples else 0.0
    return statistics.quantiles(samples, n=100)[q - 1]


def table(r: ChatResult) -> str:
    rows = [
        "| run | turns answered | failed | first words p50 (ms) | p95 (ms) | server CPU per turn "
        "(ms) | worker CPU per turn (ms) | stored once | lost | stored twice |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, load in r.runs.items():
        once, lost, twice = r.once.get(name, (0, 0, 0))
        stored_cells = f"{once} | {lost} | {twice}" if name in r.once else "— | — | —"
        n = max(len(load.answered), 1)
        server = "—" if load.server_cpu_s is None else f"{load.server_cpu_s * 1000 / n:.1f}"
        worker = "—" if load.worker_cpu_s is None else f"{load.worker_cpu_s * 1000 / n:.1f}"
        rows.append(
            f"| {name} | {len(load.answered)} | {load.failed} | "
            f"{_pct(load.first_words_ms, 50):.0f} | {_pct(load.first_words_ms, 95):.0f} | "
            f"{server} | {worker} | {stored_cells} |"
        )
    return "\n".join(rows)


def note(r: ChatResult) -> str:
    return (
        f"{r.users} simulated users, {r.turns} turns each, over HTTP on loopback to "
        "`uvicorn examples.chat.app:app --workers 2`, with `mem01session worker` extracting "
        "(the offline answering model, streaming a word at a time; the rule extractor; "
        f"`{EMBEDDER.name}` embeddings); each user waits 0.5-1.5 s after each answer. First "
        "words: from sending the message to the first streamed words. Stored once: answered "
        "turns found exactly once among the episodes once the worker drained the queue. "
        "SIGTERM halfway: uvicorn stopped (its workers finish their requests and hand their "
        "sessions' turns to memory) when half the turns were sent, then started again; the "
        "turns a client was sending meanwhile failed (counted), and every answered one must "
        "be stored once. Without memory: the same app with plain `SQLiteSession` transcripts. "
        "CPU per turn: the user and system time of the two uvicorn processes (during the load) "
        "and of the worker (until the queue drained), over the turns answered. The machine has "
        "2 cores, which the load generator, both server processes, the worker and PostgreSQL "
        "share: the p95 is this machine's, bound by it."
    )
