"""A user whose session named their zone: words said at 19:00 on 1 March 2026 in Los
Angeles (already 2 March in UTC), for the surfaces that date in the recorded zone."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

from mem01session import Memory
from mem01session.config import Settings
from mem01session.engine import Utterance
from mem01session.engine.ops import Provenance

LOS_ANGELES = ZoneInfo("America/Los_Angeles")
EVENING = datetime(2026, 3, 2, 3, 0, tzinfo=UTC).astimezone(LOS_ANGELES)
WORDS = "I lost my job as a banker yesterday."


async def said_in_los_angeles(user: str) -> None:
    """``user`` said :data:`WORDS` at :data:`EVENING`, stamped in their zone (as a session
    with ``timezone="America/Los_Angeles"`` stamps a turn): the zone is recorded."""
    async with Memory(Settings.from_env()) as memory:
        engine = await memory.engine()
        await engine.apply(
            user,
            [],
            provenance=Provenance(session_id="la", job_id=1, observed_at=EVENING, extractor="t"),
            utterances=[Utterance(0, "user", WORDS)],
        )
