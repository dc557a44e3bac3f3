"""Memory works the way the SDK's quickstart runs: short scripts and notebooks.

Each writer below is a real process, written as a user writes it: one ``Mem01Session``
with no ``Memory`` of its own making, three turns, and an exit without closing anything.
The caller's event loop differs in each: the one ``Runner.run_sync`` keeps (and does not
run between calls), a new one per turn (``asyncio.run``), a streamed run per new loop, and
a notebook's loop that is already running and is never closed. When it has exited, every
belief of the three turns is stored and the job table holds nothing ``pending`` or
``running``; no process may log anything but the offline extractor's notice. A second
process, for the same user in a new conversation, is shown what the first left (the
reader below, after the writer whose extraction never ends: how a writer ran does not
change what the next process reads).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from sqlalchemy import text

from mem01session.db import Database
from tests.child_env import pythonpath
from tests.conftest import TEST_DIM
from tests.reliability.harness import ROOT

pytestmark = pytest.mark.slow  # starts processes (see tests/spawns.py)

TURNS = (
    "I live in Valencia and I work as a pharmacist.",
    "I have a cat named Pip.",
    "I am allergic to peanuts.",
)
BELIEFS = ("Lives in Valencia", "Works as a pharmacist", "Has a cat named Pip", "peanuts")
OFFLINE_NOTICE = "extraction: offline rule extractor"

PROLOGUE = """
import asyncio, sys
from agents import Agent, Runner
from mem01session import Mem01Session
from mem01session.demo import OfflineAnswerModel

USER, TURNS = sys.argv[1], sys.argv[2:]
agent = Agent(name="assistant", instructions="Answer briefly.", model=OfflineAnswerModel())
# A generous budget: this is about exits, and on a busy test machine a read can take longer
# than the default 2 s (the run would then answer without memory, and warn).
session = Mem01Session("writer", user_id=USER, recall_wait=30)
"""

WRITERS = {
    "run_sync": """
for said in TURNS:
    result = Runner.run_sync(agent, said, session=session, run_config=session.run_config())
    print(result.final_output)
""",
    "asyncio_run": """
async def turn(said):
    result = await Runner.run(agent, said, session=session, run_config=session.run_config())
    print(result.final_output)

for said in TURNS:
    asyncio.run(turn(said))  # a new event loop for every turn
""",
    # (The offline answering model does not stream: a scripted one does.)
    "run_streamed": """
from agents.testing import ScriptedModel, assistant_message

agent = Agent(name="assistant", model=ScriptedModel([[assistant_message("Noted.")]] * 3))

async def turn(said):
    result = Runner.run_streamed(agent, said, session=session, run_config=session.run_config())
    async for _event in result.stream_events():
        pass
    print(result.final_output)

for said in TURNS:
    asyncio.run(turn(said))
""",
    # As in a notebook kernel: one loop runs all along (the thread's current loop), each
    # cell is awaited in it, and the kernel ends without closing anything.
    "notebook": """
loop = asyncio.new_event_loop()
asyncio.set_event_loop(loop)

async def cell(said):
    result = await Runner.run(agent, said, session=session, run_config=session.run_config())
    print(result.final_output)

async def kernel():
    for said in TURNS:
        await loop.create_task(cell(said))
    loop.stop()

loop.create_task(kernel())
loop.run_forever()
""",
}

READER = """
import asyncio, json, sys
from agents import Agent, Runner
from agents.testing import ScriptedModel, assistant_message
from mem01session import Mem01Session

model = ScriptedModel([[assistant_message("Noted.")]])
# A generous budget, as the writers': on a busy machine this process's first read (the
# embedding model loading) can take longer than the default 2 s.
session = Mem01Session("reader", user_id=sys.argv[1], recall_wait=30)
# The user's turns still queued (none, unless a writer left some) are extracted first: a
# run would quote their words rather than wait.
assert asyncio.run(session.flush_memory(timeout=120))
Runner.run_sync(
    Agent(name="a", model=model), "What do you know about me?",
    session=session, run_config=session.run_config(),
)
print(json.dumps(model.calls[0].input, default=str))
"""


# Shown even though Python hides them by default: an unclosed connection or transport, a
# coroutine never awaited.
SHOW = ("-W", "default::ResourceWarning", "-W", "default::RuntimeWarning")


def run_script(source: str, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [sys.executable, *SHOW, "-c", textwrap.dedent(source), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def assert_quiet(stderr: str) -> None:
    """Nothing on stderr but the offline extractor's notice: no warning, no traceback, no
    ``RuntimeError`` (logged or printed)."""
    noise = [line for line in stderr.splitlines() if not line.startswith(OFFLINE_NOTICE)]
    assert noise == [], stderr[-3000:]


@pytest.fixture
def env(db_url: str, tmp_path: Path) -> dict[str, str]:
    """A process as a user starts one: the configuration in the environment, no key."""
    out = {k: v for k, v in os.environ.items() if not k.startswith(("MEM01_", "OPENAI_"))}
    out.pop("DATABASE_URL", None)
    out.update(
        PYTHONPATH=pythonpath(ROOT),
        OPENAI_AGENTS_DISABLE_TRACING="1",
        MEM01_DATABASE_URL=db_url,
        MEM01_EMBEDDING_MODEL=f"mem01-offline-hash-v1-{TEST_DIM}",  # what the test db holds
        MEM01_HOME=str(tmp_path / "home"),
    )
    return out


async def job_states(db: Database, user: str) -> list[tuple[str, str | None, int]]:
    async with db.sa_engine.connect() as conn:
        rows = await conn.execute(
            text(
                "SELECT status, lease_owner, attempts FROM memory_jobs WHERE user_id = :u "
                "ORDER BY id"
            ),
            {"u": user},
        )
        return [(r.status, r.lease_owner, r.attempts) for r in rows]


async def active_beliefs(db: Database, user: str) -> list[str]:
    async with db.sa_engine.connect() as conn:
        rows = await conn.execute(
            text("SELECT content FROM beliefs WHERE user_id = :u AND status = 'active'"),
            {"u": user},
        )
        return [r.content for r in rows]


@pytest.mark.parametrize("writer", sorted(WRITERS))
async def test_a_script_that_exits_leaves_its_turns_remembered(
    writer: str, env: dict[str, str], db: Database
) -> None:
    user = f"script-{writer}"
    wrote = run_script(PROLOGUE + WRITERS[writer], env, user, *TURNS)
    assert_quiet(wrote.stderr)

    # Once it has exited: every turn extracted, nothing left waiting or claimed.
    assert await job_states(db, user) == [("done", None, 1)] * len(TURNS)
    stored = " | ".join(await active_beliefs(db, user))
    for belief in BELIEFS:
        assert belief in stored, (belief, stored)


STUCK = """
import asyncio, sys
from agents import Agent, Runner
from mem01session import Memory, Mem01Session
from mem01session.demo import OfflineAnswerModel
from mem01session.extraction import RuleExtractor

class Stuck(RuleExtractor):
    async def extract(self, turn, candidates, now):
        print("extracting", flush=True)
        await asyncio.Event().wait()  # an LLM call that never answers

memory = Memory(extractor=Stuck(), exit_timeout=0.5)
session = Mem01Session("writer", user_id=sys.argv[1], memory=memory, recall_wait=30)
agent = Agent(name="assistant", model=OfflineAnswerModel())
Runner.run_sync(agent, sys.argv[2], session=session, run_config=session.run_config())
"""


async def test_turns_that_cannot_be_extracted_by_exit_are_handed_back_and_said_so(
    env: dict[str, str], db: Database
) -> None:
    user = "script-stuck"
    wrote = run_script(STUCK, env, user, TURNS[0])
    warnings = [line for line in wrote.stderr.splitlines() if line.strip()]
    assert len(warnings) == 1, wrote.stderr
    assert "1 accepted turn(s) were not extracted before the process ended" in warnings[0]
    assert "job(s) #1, claimed when it ended, were handed back" in warnings[0]  # named
    assert "extracting" in wrote.stdout  # the worker had the job when the process ended
    # Handed back: pending again at once, unclaimed, the interrupted attempt not counted.
    assert await job_states(db, user) == [("pending", None, 0)]

    read = run_script(READER, env, user)  # the next process takes it and remembers it
    assert_quiet(read.stderr)
    assert "Lives in Valencia" in read.stdout
    assert await job_states(db, user) == [("done", None, 1)] * 2  # and the reader's own turn


KILLED = """
import asyncio, sys, threading
from agents import Agent, Runner
from mem01session import Memory, Mem01Session
from mem01session.demo import OfflineAnswerModel
from mem01session.extraction import RuleExtractor

class Stuck(RuleExtractor):
    async def extract(self, turn, candidates, now):
        print("extracting", flush=True)
        await asyncio.Event().wait()  # an LLM call that never answers

session = Mem01Session("first", user_id=sys.argv[1], memory=Memory(extractor=Stuck()))
agent = Agent(name="assistant", model=OfflineAnswerModel())
Runner.run_sync(agent, sys.argv[2], session=session, run_config=session.run_config())
threading.Event().wait()  # until killed
"""

NEXT = """
import asyncio, json, sys
from agents import Agent, Runner
from mem01session import Mem01Session
from mem01session.demo import OfflineAnswerModel


# Its run quotes the user's earlier turn (the dead process's, taken back); its flush waits
# for that turn at most 60 s: far less than the 120 s lease its claim still holds. The
# default budget: this process's first run loads the embedding model outside it.
session = Mem01Session("second", user_id=sys.argv[1])
agent = Agent(name="assistant", model=OfflineAnswerModel())
result = Runner.run_sync(
    agent, "Where do I live?", session=session, run_config=session.run_config()
)
flushed = asyncio.run(session.flush_memory(timeout=60))
print(json.dumps({"stale": session.last_recall.stale, "answer": result.final_output,
                  "flushed": flushed}))
"""


async def test_a_killed_processs_claim_is_taken_back_by_the_next_at_once(
    env: dict[str, str], db: Database
) -> None:
    """SIGKILL while extracting: the job stays ``running`` under a 120 s lease. The next
    process on this machine takes it back when its worker starts (the owner's pid is gone),
    so its turn for the user is neither stale nor held, and it finished before the dead
    process's lease would have ended."""
    user = "script-killed"
    first = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(KILLED), user, TURNS[0]],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert first.stdout is not None
        assert first.stdout.readline().strip() == "extracting", first.stderr
        first.send_signal(signal.SIGKILL)
    finally:
        first.kill()
        first.wait(timeout=30)
    async with db.sa_engine.connect() as conn:
        [left] = (
            await conn.execute(
                text("SELECT status, lease_owner, lease_until FROM memory_jobs WHERE user_id = :u"),
                {"u": user},
            )
        ).all()
    assert left.status == "running" and str(first.pid) in left.lease_owner  # a dead claim

    read = run_script(NEXT, env, user)
    seen = json.loads(read.stdout.splitlines()[-1])
    assert seen["stale"] is False and seen["flushed"] is True, seen
    assert "Valencia" in seen["answer"]  # its words quoted, or its belief if already extracted
    warnings = [line for line in read.stderr.splitlines() if "took back" in line]
    assert len(warnings) == 1 and f"pid {first.pid}" in warnings[0], read.stderr

    async with db.sa_engine.connect() as conn:
        rows = (
            await conn.execute(
                text(
                    "SELECT status, lease_owner, attempts, updated_at FROM memory_jobs "
                    "WHERE user_id = :u ORDER BY id"
                ),
                {"u": user},
            )
        ).all()
    assert [(r.status, r.lease_owner) for r in rows] == [("done", None)] * 2
    assert rows[0].attempts == 2  # the dead process's attempt, then the one that applied it
    assert rows[0].updated_at < left.lease_until  # applied before that lease would end
