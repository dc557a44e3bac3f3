"""The worker screens every op, whichever extractor proposed it (issue 26).

The extractors the library ships screen their own answers; one written by a user (the
README invites them) need not. A custom extractor here proposes a belief holding an API key
and one holding a door code: neither reaches the beliefs, the ledger or the sources, and
the turn's words (screened when the turn was enqueued) keep no secret either.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import pytest

from mem01session.engine import BeliefEngine
from mem01session.engine.ops import Op
from mem01session.extraction import Candidate, Extraction, Turn, TurnMessage
from mem01session.queue import JobStore, MemoryWorker
from tests.reliability.harness import all_text

pytestmark = pytest.mark.asyncio(loop_scope="module")

API_KEY = "sk-proj-Zq8xVb2Lm9Tn4Rc7Wd1Yf6Hg3Jk5Ps0"
DOOR_CODE = "Kx9!mQ2z"


class Careless:
    """A custom extractor that stores whatever it is told, secrets included."""

    name = "careless-v1"

    async def extract(
        self, turn: Turn, candidates: Sequence[Candidate], now: datetime
    ) -> Extraction:
        return Extraction(
            ops=(
                Op.add(f"Api key is {API_KEY}", key="credentials.api"),
                Op.add(f"Door code is {DOOR_CODE}", evidence=f"the code is {DOOR_CODE}"),
                Op.add("Likes green tea", evidence=f"I like green tea, key {API_KEY}"),
            )
        )


async def test_a_custom_extractors_secrets_are_never_stored(
    module_engine: BeliefEngine, uid: str
) -> None:
    said = f"My key is {API_KEY}, the door code is {DOOR_CODE}, and I like green tea."
    store = JobStore(module_engine.db)
    job_id = await store.enqueue(
        uid, "conv", [TurnMessage("user", said)], now=module_engine.clock()
    )
    worker = MemoryWorker(module_engine, Careless())
    assert await worker.run_once() == 1 and worker.last_error is None

    (job,) = (await store.statuses(uid, [job_id])).values()
    assert job.status == "done"
    beliefs = await module_engine.history(uid)
    assert [b.content for b in beliefs] == ["Likes green tea"]  # the rest was dropped
    [event] = await module_engine.ledger(uid)
    assert "redacted" in (event.reason or "")
    [episode] = await module_engine.episodes(uid)
    assert "green tea" in episode.content
    everything = await all_text(module_engine.db.sa_engine)
    assert API_KEY not in everything and DOOR_CODE not in everything
