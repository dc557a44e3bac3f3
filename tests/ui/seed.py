"""The memory the browser tests look at, written through the engine and the job store.

Alice's beliefs and words come from turns applied as the worker applies them (ops with the
turn's utterances, so each belief points at the episode it was drawn from); one turn
concluded nothing, and one belief was forgotten, which hides its episode.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from mem01session import Memory
from mem01session.config import Settings
from mem01session.engine import Utterance
from mem01session.engine.ops import Op, Provenance
from mem01session.queue import JobStore
from mem01session.queue.turns import TurnMessage

ALICE = "alice"
BOB = "bob"
CAROL = "carol"  # erased
DAVE = "dave"  # only a pending job so far
MONDAY = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
WEDNESDAY = MONDAY + timedelta(days=2)
HOSTILE = '<script>alert("x")</script> <b>bold</b> & </memory> "quoted"'
HOSTILE_SAID = 'Remember <img src=x onerror=alert(1)> and <script>alert("said")</script> </memory>'
MONDAY_SAID = "I live in New York City and I pay $2,400 a month."
MOVED_SAID = "I moved to San Francisco last weekend."
MOVED_AFTER = 'Any news? <script>alert("asked")</script>'  # what the assistant had said
IGUANA_SAID = "I have a pet iguana named Ziggy."
SISTER_SAID = "My sister Ines visits me every June."
BOB_SAID = "I drink green tea every morning."


@dataclass(frozen=True)
class Seeded:
    nyc: int
    rent: int
    sf: int
    hostile: int
    bob_tea: int
    failed_job: int
    pending_job: int
    iguana: int  # forgotten: its episode is hidden
    said: dict[str, int]  # episode ids by their words
    bob_said: int


def turn(
    session: str, job: int, when: datetime, *words: str, context: str | None = None
) -> tuple[Provenance, list[Utterance]]:
    """A turn's provenance and its user messages, as the worker hands them to the engine
    (``context``: what the first one answered)."""
    provenance = Provenance(
        session_id=session,
        item_ref=f"turn-{job}",
        job_id=job,
        observed_at=when,
        extractor="rules-v1",
    )
    return provenance, [
        Utterance(i, "user", w, context=None if i else context) for i, w in enumerate(words)
    ]


async def seed(settings: Settings | None = None) -> Seeded:
    async with Memory(settings or Settings.from_env()) as memory:
        engine = await memory.engine()
        monday, said = turn("conv-monday", 101, MONDAY, MONDAY_SAID, HOSTILE_SAID)
        r1 = await engine.apply(
            ALICE,
            [
                Op.add("Lives in New York City", key="home", evidence="I live in New York City"),
                Op.add("Pays $2,400 a month in rent", evidence="I pay $2,400 a month"),
                Op.add(HOSTILE, evidence="<img src=x onerror=alert(1)>"),
            ],
            provenance=monday,
            utterances=said,
        )
        nyc, rent, hostile = (c.belief_id for c in r1.changes)
        moved, said = turn("conv-wednesday", 102, WEDNESDAY, MOVED_SAID, context=MOVED_AFTER)
        r2 = await engine.apply(
            ALICE,
            [
                Op.supersede(
                    nyc,
                    "Lives in San Francisco",
                    evidence="I moved to San Francisco last weekend",
                    reason="moved",
                )
            ],
            provenance=moved,
            utterances=said,
        )
        sf = r2.changes[0].belief_id
        pet, said = turn("conv-wednesday", 103, WEDNESDAY + timedelta(minutes=5), IGUANA_SAID)
        r3 = await engine.apply(
            ALICE, [Op.add("Has a pet iguana named Ziggy")], provenance=pet, utterances=said
        )
        iguana = r3.changes[0].belief_id
        await engine.forget(ALICE, iguana, "no iguana: a joke")
        sister, said = turn("conv-thursday", 104, WEDNESDAY + timedelta(days=1), SISTER_SAID)
        await engine.apply(ALICE, [], provenance=sister, utterances=said)
        episodes = {e.content: e.id for e in await engine.episodes(ALICE)}

        tea, said = turn("conv-bob", 201, MONDAY, BOB_SAID)
        r4 = await engine.apply(BOB, [Op.add("Likes green tea")], provenance=tea, utterances=said)
        [bob_said] = await engine.episodes(BOB)
        opera, said = turn("conv-carol", 301, MONDAY, "I love opera.")
        await engine.apply(CAROL, [Op.add("Likes opera")], provenance=opera, utterances=said)
        await engine.erase_user(CAROL)

        store = JobStore(engine.db)
        failed = await store.enqueue(
            ALICE, "conv-friday", [TurnMessage("user", "hello <there>")], now=WEDNESDAY
        )
        [job] = await store.claim("w1", now=WEDNESDAY, lease=timedelta(minutes=1))
        assert job.id == failed
        await store.fail(job, "w1", "extractor exploded <badly>", now=WEDNESDAY, retry_at=None)
        pending = await store.enqueue(
            DAVE, "conv-dave", [TurnMessage("user", "I have a dog")], now=WEDNESDAY
        )
        return Seeded(
            nyc,
            rent,
            sf,
            hostile,
            r4.changes[0].belief_id,
            failed,
            pending,
            iguana,
            episodes,
            bob_said.id,
        )
