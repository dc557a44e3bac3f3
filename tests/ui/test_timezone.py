"""The recall page dates in the zone the user's sessions gave."""

from __future__ import annotations

import asyncio

from starlette.testclient import TestClient

from tests.zones import said_in_los_angeles

from .conftest import ok


def test_the_recall_page_dates_in_the_users_zone(client: TestClient) -> None:
    asyncio.run(said_in_los_angeles("lena"))
    page = ok(client, "/recall?u=lena&q=banker&budget=800")
    block = page.split('<pre class="block" id="block">')[1].split("</pre>")[0]
    assert "1 Mar 2026:\n- &quot;I lost my job" in block  # 19:00 on 1 March there
    assert ">time zone America/Los_Angeles</span>" in page  # the header says which
