"""Each page's content, on a real database seeded through the engine (read-only tests)."""

from __future__ import annotations

import re

import pytest
from starlette.testclient import TestClient

from .conftest import cells, ok
from .seed import ALICE, BOB, CAROL, DAVE, HOSTILE, Seeded


@pytest.fixture
def client(shared: tuple[TestClient, Seeded]) -> TestClient:
    """Every test here only reads: one seeded database and client for the module."""
    return shared[0]


@pytest.fixture
def seeded(shared: tuple[TestClient, Seeded]) -> Seeded:
    return shared[1]


def test_users_page_lists_every_user_with_counts(client: TestClient) -> None:
    page = ok(client, "/")
    alice = cells(page, f">{ALICE}</a>")
    assert "<td>3</td>" in alice and "1 superseded" in alice and "1 failed" in alice
    assert "badge b-erased" in cells(page, f">{CAROL}</a>")
    dave = cells(page, f">{DAVE}</a>")  # only a pending job: listed all the same
    assert "1 waiting" in dave and "b-waiting" in dave
    assert "<td>1</td>" in cells(page, f">{BOB}</a>")
    # Most recent activity first: carol was erased last; dave's job is dated in March.
    order = re.findall(r'href="/user\?u=(\w+)"', page)
    assert order == [CAROL, BOB, ALICE, DAVE]


def test_users_page_filters_by_user_id(client: TestClient) -> None:
    page = ok(client, "/?q=AL")
    assert f">{ALICE}</a>" in page and f">{BOB}</a>" not in page
    assert "No user matches" in ok(client, "/?q=zzz")


def test_a_users_current_beliefs_filterable_by_text(client: TestClient) -> None:
    page = ok(client, f"/user?u={ALICE}")
    assert "Lives in San Francisco" in page and "Pays $2,400 a month in rent" in page
    assert "Lives in New York City" not in page  # superseded: history only
    sf = cells(page, "Lives in San Francisco")
    assert "b-active" in sf and "since 2026-03-04" in sf and "0.80" in sf
    assert "conv-wednesday" in sf and "I moved to San Francisco last weekend" in sf
    assert "<b>3</b> current beliefs" in page and "<b>1</b> failed job<" in page

    page = ok(client, f"/user?u={ALICE}&q=LIVES")
    assert "Lives in San Francisco" in page and "Pays $2,400" not in page
    page = ok(client, f"/user?u={ALICE}&q=lives&all=1")
    nyc = cells(page, "Lives in New York City")
    assert "b-superseded" in nyc and "2026-03-02 to 2026-03-04" in nyc
    assert "No current beliefs contain" in ok(client, f"/user?u={ALICE}&q=zebra")


def test_a_beliefs_history_and_provenance(client: TestClient, seeded: Seeded) -> None:
    page = ok(client, f"/belief?u={ALICE}&id={seeded.nyc}")
    assert 'id="belief-content">Lives in New York City</span>' in page
    assert "b-superseded" in page and f"/belief?u={ALICE}&amp;id={seeded.sf}" in page
    history = page.split("<h2>History</h2>")[1].split("<h2>Provenance</h2>")[0]
    assert re.findall(r"b-(add|supersede)\"", history) == ["add", "supersede"]
    supersede = cells(history, "SUPERSEDE")
    assert "Lives in New York City" in supersede and "Lives in San Francisco" in supersede
    assert "<td>moved</td>" in supersede and "<code>rules-v1</code>" in supersede
    provenance = page.split("<h2>Provenance</h2>")[1]
    source = cells(provenance, "conv-monday")
    assert "turn-1" in source and "I live in New York City" in source
    assert "2026-03-02 09:00 UTC" in source and "rules-v1" in source
    assert 'action="/correct"' not in page  # only active beliefs can be changed

    page = ok(client, f"/belief?u={ALICE}&id={seeded.sf}")
    versions = page.split("<h2>Versions</h2>")[1].split("</table>")[0]
    nyc, sf = re.findall(r"<tr><td><a.*?</tr>", versions)  # oldest first
    assert "Lives in New York City" in nyc and "b-superseded" in nyc and f"#{seeded.sf}" in nyc
    assert "<b>Lives in San Francisco</b>" in sf and "b-active" in sf
    history = page.split("<h2>History</h2>")[1]
    assert re.findall(r"b-(add|supersede)\"", history) == ["add", "supersede"]
    assert 'action="/correct"' in page and 'action="/forget"' in page
    assert "<h2>Versions</h2>" not in ok(client, f"/belief?u={ALICE}&id={seeded.rent}")


def test_what_would_be_recalled(client: TestClient, seeded: Seeded) -> None:
    page = ok(client, f"/recall?u={ALICE}")
    assert 'name="q"' in page and "memory block" not in page  # the form alone
    page = ok(client, f"/recall?u={ALICE}&q=where+do+I+live&budget=800")
    block = page.split('<pre class="block" id="block">')[1].split("</pre>")[0]
    assert block.startswith("&lt;memory&gt;") and block.endswith("&lt;/memory&gt;")
    records = block.split("Their words, by date")[0]  # the quotes follow
    assert "- Lives in San Francisco\n" in records
    assert "New York" not in records  # current truth only
    assert re.search(r"<b>\d+</b> of 800 tokens \(tokenizer <code>\S+</code>\)", page)
    scores = page.split("Why each record was recalled")[1]
    row = cells(scores, "Lives in San Francisco")
    assert len(re.findall(r"\d\.\d{3}", row)) == 6

    page = ok(client, f"/recall?u={ALICE}&q=where+do+I+live&history=1")
    assert "- Lives in New York City (until 4 Mar 2026)" in page
    assert "No memory block" in ok(client, f"/recall?u={ALICE}&q=rent&budget=5")


def test_pending_turns_are_flagged_on_the_recall_page(client: TestClient) -> None:
    page = ok(client, f"/recall?u={DAVE}&q=pets")
    assert "still waiting for extraction" in page and "No memory block" in page


def test_the_users_jobs(client: TestClient, seeded: Seeded) -> None:
    page = ok(client, f"/jobs?u={ALICE}")
    job = cells(page, f'id="job-{seeded.failed_job}"')
    assert "b-failed" in job and "extractor exploded &lt;badly&gt;" in job
    assert "hello &lt;there&gt;" in job and 'action="/retry"' in job
    assert "No pending jobs." in ok(client, f"/jobs?u={ALICE}&status=pending")
    dave = ok(client, f"/jobs?u={DAVE}&status=pending")
    assert "b-pending" in dave and 'action="/retry"' not in dave
    assert f'id="job-{seeded.failed_job}"' not in dave  # alice's job is not dave's


def test_an_erased_user_is_shown_as_erased(client: TestClient) -> None:
    page = ok(client, f"/user?u={CAROL}")
    assert "badge b-erased" in page and "This user was erased" in page
    assert "Likes opera" not in page and "No current beliefs." in page
    assert "Nothing left to erase" in ok(client, f"/erase?u={CAROL}")


def test_belief_text_is_shown_as_text_everywhere(client: TestClient, seeded: Seeded) -> None:
    """HTML, script and the block's own closing tag in a belief render as text."""
    pages = [
        ok(client, f"/user?u={ALICE}"),
        ok(client, f"/belief?u={ALICE}&id={seeded.hostile}"),
        ok(client, f"/recall?u={ALICE}&q=bold+script"),
        ok(client, f"/user?u={ALICE}&q=%3Cscript%3E"),
    ]
    for page in pages:
        assert "<script>alert" not in page and "<b>bold</b>" not in page
        assert "<img" not in page and "</memory>" not in page
        # Only the page's own script tag.
        assert page.count("<script") == 1 and '<script src="/static/app.js" defer>' in page
    shown = "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &lt;b&gt;bold&lt;/b&gt; &amp; "
    assert shown + "&lt;/memory&gt; &quot;quoted&quot;" in pages[0]
    assert "&lt;img src=x onerror=alert(1)&gt;" in pages[1]
    # The recall block is shown as the model receives it: already escaped by the renderer.
    assert "&amp;lt;/memory&amp;gt;" in pages[2]
    assert HOSTILE not in "".join(pages)


def test_user_ids_with_markup_or_slashes_work(client: TestClient) -> None:
    page = client.get("/user", params={"u": "<b>x</b>/y"})
    assert page.status_code == 404
    assert "&lt;b&gt;x&lt;/b&gt;/y" in page.text and "<b>x</b>" not in page.text


@pytest.mark.parametrize(
    ("path", "status", "message"),
    [
        ("/user?u=nobody", 404, "No memory is recorded for user &#x27;nobody&#x27;."),
        ("/user", 400, "This page needs a user id"),
        ("/user?u=%20", 400, "This page needs a user id"),
        (f"/user?u={'x' * 300}", 400, "over the limit of 200"),
        (
            f"/belief?u={ALICE}&id=abc",
            400,
            "A belief id is a positive integer, got &#x27;abc&#x27;",
        ),
        (f"/belief?u={ALICE}&id=0", 400, "A belief id is a positive integer"),
        (f"/belief?u={ALICE}&id=1.5", 400, "A belief id is a positive integer"),
        (f"/belief?u={ALICE}&id=99999999999999999999", 400, "A belief id is a positive integer"),
        (f"/belief?u={ALICE}&id=%EF%BC%91", 400, "A belief id is a positive integer"),
        (f"/belief?u={ALICE}", 400, "A belief id is a positive integer"),
        (f"/belief?u={ALICE}&id=999999", 404, "User &#x27;alice&#x27; has no belief #999999."),
        (f"/recall?u={ALICE}&q=x&budget=0", 400, "between 1 and 100000"),
        (f"/recall?u={ALICE}&q=x&budget=many", 400, "positive integer"),
        (f"/jobs?u={ALICE}&status=lost", 400, "job statuses are"),
        ("/nowhere", 404, "There is no page at /nowhere."),
        ("/user?u=a%00b", 400, "user id contains a NUL byte"),
    ],
)
def test_bad_input_gets_a_clear_error_page(
    client: TestClient, path: str, status: int, message: str
) -> None:
    response = client.get(path)
    assert response.status_code == status, response.text
    assert message in response.text
    assert "Traceback" not in response.text and '<section class="error">' in response.text


def test_another_users_belief_looks_unknown(client: TestClient, seeded: Seeded) -> None:
    theirs = client.get(f"/belief?u={ALICE}&id={seeded.bob_tea}")
    missing = client.get(f"/belief?u={ALICE}&id=999999")
    assert theirs.status_code == missing.status_code == 404
    assert theirs.text.replace(str(seeded.bob_tea), "N") == missing.text.replace("999999", "N")
    assert "tea" not in theirs.text


def test_static_files_are_served_from_the_package(client: TestClient) -> None:
    css = client.get("/static/style.css")
    assert css.status_code == 200 and css.headers["content-type"].startswith("text/css")
    assert "cache-control" not in css.headers
    js = client.get("/static/app.js")
    assert js.status_code == 200 and "data-filter-table" in js.text
    assert client.get("/static/../app.py").status_code == 404
