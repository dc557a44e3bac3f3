"""The memory the browser tests look at, written through the engine and the job store."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from mem01session import Memory
from mem01session.config import Settings
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


@dataclass(frozen=True)
class Seeded:
    nyc: int
    rent: int
    sf: int
    hostile: int
    bob_tea: int
    failed_job: int
    pending_job: int


async def seed(settings: Settings | None = None) -> Seeded:
    async with Memory(settings or Settings.from_env()) as memory:
        engine = await memory.engine()
        monday = Provenance(
            session_id="conv-monday", item_ref="turn-1", observed_at=MONDAY, extractor="rules-v1"
        )
        r1 = await engine.apply(
            ALICE,
            [
                Op.add("Lives in New York City", key="home", evidence="I live in New York City"),
                Op.add("Pays $2,400 a month in rent", evidence="I pay $2,400 a month"),
                Op.add(HOSTILE, evidence="<img src=x onerror=alert(1)>"),
            ],
            provenance=monday,
        )
        nyc, rent, hostile = (c.belief_id for c in r1.changes)
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
            provenance=Provenance(
                session_id="conv-wednesday", observed_at=WEDNESDAY, extractor="rules-v1"
            ),
        )
        sf = r2.changes[0].belief_id
        r3 = await engine.apply(BOB, [Op.add("Likes green tea")], provenance=Provenance("conv-bob"))
        await engine.apply(CAROL, [Op.add("Likes opera")], provenance=Provenance("conv-carol"))
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
        return Seeded(nyc, rent, sf, hostile, r3.changes[0].belief_id, failed, pending)
