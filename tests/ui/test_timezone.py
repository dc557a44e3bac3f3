"""The recall page dates in the zone the user's sessions gave."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

from starlette.testclient import TestClient

from mem01session import Memory
from mem01session.config import Settings
from mem01session.engine import Utterance
from mem01session.engine.ops import Provenance

from .conftest import ok


async def _said_in_la(user: str) -> None:
    async with Memory(Settings.from_env()) as memory:
        engine = await memory.engine()
        evening = datetime(2026, 3, 2, 3, 0, tzinfo=UTC).astimezone(ZoneInfo("America/Los_Angeles"))
        await engine.apply(
            user,
            [],
            provenance=Provenance(session_id="la", job_id=1, observed_at=evening, extractor="t"),
            utterances=[Utterance(0, "user", "I lost my job as a banker yesterday.")],
        )


def test_the_recall_page_dates_in_the_users_zone(client: TestClient) -> None:
    asyncio.run(_said_in_la("lena"))
    page = ok(client, "/recall?u=lena&q=banker&budget=800")
    block = page.split('<pre class="block" id="block">')[1].split("</pre>")[0]
    assert "1 Mar 2026:\n- &quot;I lost my job" in block  # 19:00 on 1 March there
