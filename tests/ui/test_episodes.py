"""Episodes in the browser: the user's words by conversation, the words a belief came from,
hidden ones marked, quotes in the recall table; another user's words never shown (read-only
tests on one seeded database)."""

from __future__ import annotations

import re

import pytest
from starlette.testclient import TestClient

from mem01session.db.schema import USER_TABLES

from .conftest import cells, ok, rows
from .seed import (
    ALICE,
    BOB,
    BOB_SAID,
    CAROL,
    HOSTILE_SAID,
    IGUANA_SAID,
    MONDAY_SAID,
    MOVED_AFTER,
    MOVED_SAID,
    SISTER_SAID,
    Seeded,
)


@pytest.fixture
def client(shared: tuple[TestClient, Seeded]) -> TestClient:
    return shared[0]


@pytest.fixture
def seeded(shared: tuple[TestClient, Seeded]) -> Seeded:
    return shared[1]


def conversations(page: str) -> list[str]:
    return re.findall(r"<h2>Conversation <code>(.*?)</code></h2>", page)


def section(page: str, conversation: str) -> str:
    """The part of the episodes tab that lists one conversation."""
    return page.split(f"<h2>Conversation <code>{conversation}</code></h2>")[1].split("</section>")[
        0
    ]


def test_the_episodes_tab_lists_what_was_said_by_conversation(
    client: TestClient, seeded: Seeded
) -> None:
    page = ok(client, f"/episodes?u={ALICE}")
    assert '<a href="/episodes?u=alice" aria-current="page">Episodes</a>' in page
    # The most recently active conversation first; in each, the order things were said.
    assert conversations(page) == ["conv-thursday", "conv-wednesday", "conv-monday"]
    monday = section(page, "conv-monday")
    assert "2 episodes · 2026-03-02" in monday
    first, second = re.findall(r"<tr><td>.*?</tr>", monday, re.S)
    assert MONDAY_SAID in first and f'id="episode-{seeded.said[MONDAY_SAID]}"' in first
    assert "2026-03-02 09:00 UTC" in first and "who-user" in first
    # The beliefs drawn from it link to their pages; its turn to the jobs tab.
    assert f'href="/belief?u={ALICE}&amp;id={seeded.nyc}">#{seeded.nyc}</a>' in first
    assert f'href="/belief?u={ALICE}&amp;id={seeded.rent}">#{seeded.rent}</a>' in first
    assert 'href="/jobs?u=alice#job-101">#101</a>' in first
    assert "Remember &lt;img src=x onerror=alert(1)&gt;" in second
    assert f">#{seeded.hostile}</a>" in second
    sister = cells(section(page, "conv-thursday"), SISTER_SAID)
    assert '<td><span class="muted">–</span></td>' in sister  # nothing was concluded
    assert "<b>5</b> episodes in <b>3</b> conversations (<b>1</b> hidden)" in page
    # The header counts the episodes recall can quote, on every tab.
    assert "<b>4</b> episodes</a>" in page
    assert "<b>4</b> episodes</a>" in ok(client, f"/user?u={ALICE}")


def test_words_are_shown_as_text(client: TestClient, seeded: Seeded) -> None:
    hostile = seeded.said[HOSTILE_SAID]
    pages = [
        ok(client, f"/episodes?u={ALICE}"),
        ok(client, f"/episodes?u={ALICE}&q=%3Cscript%3E"),
        ok(client, f"/episode?u={ALICE}&id={hostile}"),
        ok(client, f"/belief?u={ALICE}&id={seeded.hostile}"),
    ]
    for page in pages:
        assert "<script>alert" not in page and "<img" not in page and "</memory>" not in page
        assert page.count("<script") == 1  # only the page's own
        assert "&lt;script&gt;alert(&quot;said&quot;)&lt;/script&gt; &lt;/memory&gt;" in page
    # The filter box shows what was typed, as text.
    assert 'name="q" value="&lt;script&gt;"' in pages[1]
    assert conversations(pages[1]) == ["conv-monday"]


def test_filter_by_words_and_by_conversation(client: TestClient) -> None:
    page = ok(client, f"/episodes?u={ALICE}&q=IGUANA")
    assert conversations(page) == ["conv-wednesday"]
    assert IGUANA_SAID in page and MOVED_SAID not in page
    assert "<b>1</b> episode in <b>1</b> conversation" in page

    page = ok(client, f"/episodes?u={ALICE}&c=conv-monday")
    assert conversations(page) == ["conv-monday"] and MONDAY_SAID in page
    assert 'name="c" value="conv-monday"' in page
    assert '<a class="clear" href="/episodes?u=alice">all conversations</a>' in page
    assert "only this conversation" not in page

    page = ok(client, f"/episodes?u={ALICE}&c=conv-monday&q=iguana")
    assert "No episodes in conversation <code>conv-monday</code> contain" in page
    assert '<a class="clear" href="/episodes?u=alice&amp;q=iguana">' in page
    assert "No episodes in conversation" in ok(client, f"/episodes?u={ALICE}&c=conv-nowhere")


def test_another_users_words_never_show(client: TestClient, seeded: Seeded) -> None:
    for path in (
        f"/episodes?u={ALICE}",
        f"/episodes?u={ALICE}&q=tea",
        f"/episodes?u={ALICE}&c=conv-bob",
        f"/recall?u={ALICE}&q=green+tea+every+morning",
    ):
        page = ok(client, path)
        assert BOB_SAID not in page and "drink green tea" not in page
    bob = ok(client, f"/episodes?u={BOB}")
    assert conversations(bob) == ["conv-bob"] and BOB_SAID in bob
    assert not any(said in bob for said in seeded.said)
    # Bob's episode id under alice's name answers exactly like one that does not exist.
    theirs = client.get(f"/episode?u={ALICE}&id={seeded.bob_said}")
    missing = client.get(f"/episode?u={ALICE}&id=999999")
    assert theirs.status_code == missing.status_code == 404
    assert theirs.text.replace(str(seeded.bob_said), "N") == missing.text.replace("999999", "N")
    assert "User &#x27;alice&#x27; has no episode #999999." in missing.text
    assert "tea" not in theirs.text


def test_a_belief_shows_the_words_it_was_drawn_from(client: TestClient, seeded: Seeded) -> None:
    moved = seeded.said[MOVED_SAID]
    page = ok(client, f"/belief?u={ALICE}&id={seeded.sf}")
    said = page.split("<h2>What was said</h2>")[1].split("<h2>Provenance</h2>")[0]
    assert MOVED_SAID in said and "2026-03-04 09:00 UTC" in said
    assert f'href="/episodes?u={ALICE}&amp;c=conv-wednesday#episode-{moved}"' in said
    assert f'href="/episode?u={ALICE}&amp;id={moved}">e#{moved}</a>' in said
    assert "hidden" not in said
    source = cells(page.split("<h2>Provenance</h2>")[1], "conv-wednesday")
    assert f">e#{moved}</a>" in source

    # Two beliefs drawn from one message: each shows it.
    for belief in (seeded.nyc, seeded.rent):
        page = ok(client, f"/belief?u={ALICE}&id={belief}")
        assert MONDAY_SAID in page.split("<h2>What was said</h2>")[1]


def test_one_episode_and_the_beliefs_drawn_from_it(client: TestClient, seeded: Seeded) -> None:
    monday = seeded.said[MONDAY_SAID]
    page = ok(client, f"/episode?u={ALICE}&id={monday}")
    assert f'id="episode-content">{MONDAY_SAID}</span>' in page
    assert f'href="/episodes?u={ALICE}&amp;c=conv-monday#episode-{monday}"' in page
    assert "not hidden: recall quotes it" in page
    drawn = page.split("<h2>Beliefs drawn from it</h2>")[1]
    assert "Lives in New York City" in cells(drawn, "New York") and "b-superseded" in drawn
    assert "b-active" in cells(drawn, "Pays $2,400")
    sister = ok(client, f"/episode?u={ALICE}&id={seeded.said[SISTER_SAID]}")
    assert "No belief was drawn from these words." in sister
    assert '<dt>after</dt><dd><span class="muted">–</span></dd>' in page  # nothing before


def test_an_episode_shows_what_it_answered_as_inert_text(
    client: TestClient, seeded: Seeded
) -> None:
    page = ok(client, f"/episode?u={ALICE}&id={seeded.said[MOVED_SAID]}")
    assert (
        "<dt>after</dt><dd>Any news? &lt;script&gt;alert(&quot;asked&quot;)&lt;/script&gt;</dd>"
        in page
    )
    assert MOVED_AFTER not in page


def test_hidden_episodes_are_marked(client: TestClient, seeded: Seeded) -> None:
    meaning = "a belief drawn from these words was forgotten, so recall no longer quotes them"
    page = ok(client, f"/episodes?u={ALICE}")
    assert "A belief drawn from these words was forgotten" in page
    assert page.count('class="badge b-hidden"') == 2  # the note and the one hidden row
    row = cells(section(page, "conv-wednesday"), IGUANA_SAID)
    assert "b-hidden" in row and "content said gone" in row and "since " in row
    assert f'title="Hidden: {meaning}"' in row
    assert "b-hidden" not in cells(section(page, "conv-wednesday"), MOVED_SAID)

    belief = ok(client, f"/belief?u={ALICE}&id={seeded.iguana}")
    assert "b-hidden" in belief.split("<h2>What was said</h2>")[1]
    episode = ok(client, f"/episode?u={ALICE}&id={seeded.said[IGUANA_SAID]}")
    assert meaning in episode and "not hidden" not in episode
    # And recall does not quote it.
    recall = ok(client, f"/recall?u={ALICE}&q=iguana+named+Ziggy&budget=2000")
    assert "Ziggy" not in recall.split('id="block">')[1]


def test_the_recall_table_lists_the_quotes_it_packed(client: TestClient, seeded: Seeded) -> None:
    sister = seeded.said[SISTER_SAID]
    page = ok(client, f"/recall?u={ALICE}&q=when+does+my+sister+visit&budget=800")
    block = page.split('<pre class="block" id="block">')[1].split("</pre>")[0]
    assert f"- &quot;{SISTER_SAID}&quot;" in block
    assert re.search(r"\d+ beliefs? and 1 quote packed of \d+ candidates", page)
    scores = page.split("<h2>Why each record was recalled</h2>")[1]
    assert "for a quote, relevance" in scores
    row = cells(scores, SISTER_SAID)
    assert f">e#{sister}</a>" in row and "b-quote" in row and "conv-thursday" in row
    assert len(re.findall(r"\d\.\d{3}", row)) == 5  # every signal but confidence
    assert '<td><span class="muted">–</span></td>' in row
    belief = cells(scores, "Lives in San Francisco")
    assert len(re.findall(r"\d\.\d{3}", belief)) == 6
    assert "day r" not in row
    dated = ok(client, f"/recall?u={ALICE}&q=what+did+I+say+on+March+5%3F&budget=800")
    assert "day r1" in cells(dated.split("<h2>Why each record was recalled</h2>")[1], SISTER_SAID)


def test_users_page_and_erased_users(client: TestClient) -> None:
    page = ok(client, "/")
    assert '<a href="/episodes?u=alice">4</a>' in cells(page, f">{ALICE}</a>")
    assert '<a href="/episodes?u=bob">1</a>' in cells(page, f">{BOB}</a>")
    assert "episodes" in cells(page, "<th>")
    erased = ok(client, f"/episodes?u={CAROL}")
    assert "every belief, episode (what the user said)" in erased
    assert "No episodes recorded" in erased and "opera" not in erased


@pytest.mark.parametrize(
    ("path", "status", "message"),
    [
        (f"/episode?u={ALICE}&id=abc", 400, "An episode id is a positive integer"),
        (f"/episode?u={ALICE}&id=0", 400, "An episode id is a positive integer"),
        (f"/episode?u={ALICE}", 400, "An episode id is a positive integer"),
        (f"/episode?u={ALICE}&id=999999", 404, "User &#x27;alice&#x27; has no episode #999999."),
        (f"/episodes?u={ALICE}&c=a%00b", 400, "conversation id contains a NUL byte"),
        (f"/episodes?u={ALICE}&c={'c' * 300}", 400, "over the limit of 200"),
        ("/episodes?u=nobody", 404, "No memory is recorded for user"),
        ("/episodes", 400, "This page needs a user id"),
    ],
)
def test_bad_input_gets_a_clear_error_page(
    client: TestClient, path: str, status: int, message: str
) -> None:
    response = client.get(path)
    assert response.status_code == status, response.text
    assert message in response.text and '<section class="error">' in response.text


def test_reading_changes_nothing(client: TestClient, seeded: Seeded, shared_env: str) -> None:
    def state() -> list[object]:
        counts = [
            rows(shared_env, f"SELECT count(*) FROM {t} WHERE user_id = %s", ALICE)
            for t in USER_TABLES
        ]
        return [
            *counts,
            rows(shared_env, "SELECT version, episodes FROM memory_users ORDER BY user_id"),
            rows(shared_env, "SELECT id, hidden_at FROM episodes ORDER BY id"),
        ]

    before = state()
    for path in (
        f"/episodes?u={ALICE}",
        f"/episodes?u={ALICE}&c=conv-monday&q=live",
        f"/episode?u={ALICE}&id={seeded.said[MONDAY_SAID]}",
        f"/belief?u={ALICE}&id={seeded.iguana}",
        f"/recall?u={ALICE}&q=sister",
    ):
        ok(client, path)
    assert state() == before
