"""Correct, forget, retry and erase: each one's effect in the database, recorded as the
inspector's, and each refusal leaving everything as it was."""

from __future__ import annotations

import re

import pytest
from starlette.testclient import TestClient

from mem01session.db.schema import USER_TABLES

from .conftest import csrf_of, rows
from .seed import ALICE, BOB, CAROL, Seeded


@pytest.fixture
def csrf(client: TestClient) -> str:
    return csrf_of(client.get(f"/erase?u={ALICE}").text)


def post(client: TestClient, path: str, csrf: str, **form: object) -> tuple[int, str]:
    response = client.post(path, data={"csrf": csrf, **{k: str(v) for k, v in form.items()}})
    return response.status_code, response.headers.get("location") or response.text


def test_correct_supersedes_through_the_engine(
    client: TestClient, seeded: Seeded, env: str, csrf: str
) -> None:
    status, location = post(
        client, "/correct", csrf, u=ALICE, id=seeded.sf, text="Lives in Oakland", reason="typo"
    )
    assert status == 303
    match = re.fullmatch(rf"/belief\?u={ALICE}&id=(\d+)&done=corrected", location)
    assert match, location
    new = int(match.group(1))
    assert rows(env, "SELECT status, superseded_by FROM beliefs WHERE id = %s", seeded.sf) == [
        ("superseded", new)
    ]
    assert rows(env, "SELECT user_id, content, status, key FROM beliefs WHERE id = %s", new) == [
        (ALICE, "Lives in Oakland", "active", "home")
    ]
    [event] = rows(
        env,
        "SELECT op, related_ids, reason, after->>'extractor', after->>'content' "
        "FROM belief_events WHERE user_id = %s AND belief_id = %s",
        ALICE,
        new,
    )
    assert event == ("CORRECT", [seeded.sf], "typo", "inspector", "Lives in Oakland")
    assert rows(env, "SELECT extractor FROM belief_sources WHERE belief_id = %s", new) == [
        ("inspector",)
    ]

    page = client.get(location).text
    assert "Corrected." in page and 'id="belief-content">Lives in Oakland<' in page
    assert "No words are kept for this belief" in page  # typed here, not said in a turn
    versions = page.split("<h2>Versions</h2>")[1].split("</table>")[0]
    texts = re.findall(r"<td>(?:<b>)?(Lives in [\w ]+)", versions)
    assert texts == ["Lives in New York City", "Lives in San Francisco", "Lives in Oakland"]
    assert versions.count("b-superseded") == 2
    history = page.split("<h2>History</h2>")[1].split("<h2>Provenance</h2>")[0]
    assert re.findall(r'class="badge b-(add|supersede|correct)"', history) == [
        "add",
        "supersede",
        "correct",
    ]
    correct = next(r for r in re.findall(r"<tr>.*?</tr>", history) if "b-correct" in r)
    assert "Lives in San Francisco" in correct and "Lives in Oakland" in correct
    assert "<td>typo</td>" in correct and "<code>inspector</code>" in correct


def test_correct_default_reason(client: TestClient, seeded: Seeded, env: str, csrf: str) -> None:
    assert post(client, "/correct", csrf, u=ALICE, id=seeded.rent, text="Pays $2,500")[0] == 303
    assert rows(env, "SELECT reason FROM belief_events WHERE op = 'CORRECT'") == [
        ("corrected in the memory browser",)
    ]


def test_forget_invalidates_with_the_reason(
    client: TestClient, seeded: Seeded, env: str, csrf: str
) -> None:
    status, location = post(client, "/forget", csrf, u=ALICE, id=seeded.rent, reason="wrong")
    assert (status, location) == (303, f"/belief?u={ALICE}&id={seeded.rent}&done=forgotten")
    assert rows(env, "SELECT status FROM beliefs WHERE id = %s", seeded.rent) == [("invalidated",)]
    assert rows(
        env,
        "SELECT op, reason, after->>'extractor' FROM belief_events WHERE belief_id = %s "
        "ORDER BY id",
        seeded.rent,
    ) == [("ADD", None, "rules-v1"), ("FORGET", "wrong", "inspector")]
    page = client.get(location).text
    assert "Forgotten." in page and "b-invalidated" in page and 'action="/forget"' not in page
    assert "Pays $2,400" not in client.get(f"/user?u={ALICE}").text
    # The words it was drawn from leave recall too, and are marked so.
    assert "b-hidden" in page.split("<h2>What was said</h2>")[1].split("<h2>Provenance")[0]


@pytest.mark.parametrize(
    ("path", "form", "status", "message"),
    [
        ("/correct", {"text": ""}, 400, "must not be empty"),
        ("/correct", {"text": "   "}, 400, "must not be empty"),
        ("/correct", {"text": "Lives in San Francisco"}, 400, "same as the old one"),
        ("/correct", {"id": "nyc", "text": "x"}, 400, "A belief id is a positive integer"),
        ("/correct", {"id": "old", "text": "x"}, 409, "is superseded; only active beliefs"),
        ("/correct", {"id": "bob", "text": "x"}, 404, "has no belief"),
        ("/correct", {"u": "nobody", "text": "x"}, 404, "No memory is recorded"),
        ("/correct", {"text": "x" * 1500}, 400, "1000"),
        ("/forget", {"reason": ""}, 400, "Say why"),
        ("/forget", {"id": "old", "reason": "x"}, 409, "is superseded"),
        ("/forget", {"id": "bob", "reason": "x"}, 404, "has no belief"),
        ("/correct", {"u": CAROL, "text": "x"}, 404, "has no belief"),
    ],
)
def test_refused_changes_change_nothing(
    client: TestClient,
    seeded: Seeded,
    env: str,
    csrf: str,
    path: str,
    form: dict[str, str],
    status: int,
    message: str,
) -> None:
    ids = {"old": str(seeded.nyc), "bob": str(seeded.bob_tea)}
    data = {"u": ALICE, "id": str(seeded.sf), "reason": "r"} | form
    data["id"] = ids.get(data["id"], data["id"])
    before = rows(env, "SELECT count(*) FROM belief_events")
    got, text = post(client, path, csrf, **data)
    assert (got, message in text) == (status, True), text
    assert "Traceback" not in text
    assert rows(env, "SELECT count(*) FROM belief_events") == before
    assert rows(env, "SELECT status FROM beliefs WHERE id = %s", seeded.bob_tea) == [("active",)]


def test_retry_sends_a_failed_job_back(
    client: TestClient, seeded: Seeded, env: str, csrf: str
) -> None:
    # Another user's job id is not found, and stays failed.
    status, text = post(client, "/retry", csrf, u=BOB, id=seeded.failed_job)
    assert status == 404 and "has no failed job" in text
    job = "SELECT status, attempts FROM memory_jobs WHERE id = %s"
    assert rows(env, job, seeded.failed_job) == [("failed", 1)]

    status, location = post(client, "/retry", csrf, u=ALICE, id=seeded.failed_job)
    assert (status, location) == (303, f"/jobs?u={ALICE}&done=retried")
    assert rows(env, job, seeded.failed_job) == [("pending", 0)]
    page = client.get(location).text
    assert "pending again" in page and 'action="/retry"' not in page
    assert post(client, "/retry", csrf, u=ALICE, id=seeded.failed_job)[0] == 404
    assert post(client, "/retry", csrf, u=ALICE, id="x")[0] == 400


def test_erase_needs_the_typed_user_id_then_shows_the_receipt(
    client: TestClient, seeded: Seeded, env: str, csrf: str
) -> None:
    for wrong in ("", "ALICE", "alice ", "bob"):
        status, text = post(client, "/erase", csrf, u=ALICE, confirm=wrong)
        assert status == 400 and "does not match" in text, wrong
    assert rows(env, "SELECT count(*) FROM beliefs WHERE user_id = %s", ALICE) == [(5,)]
    erase_page = client.get(f"/erase?u={ALICE}").text
    assert "every episode (what the user said" in erase_page

    status, text = post(client, "/erase", csrf, u=ALICE, confirm=ALICE)
    assert status == 200 and "Receipt" in text
    receipt = dict(re.findall(r"<tr><td>(\w+)</td><td>(\d+)</td></tr>", text))
    terms = int(receipt.pop("belief_terms"))  # the words of the active beliefs
    episode_terms = int(receipt.pop("episode_terms"))  # the words of the recallable episodes
    assert receipt == {
        "beliefs": "5",
        "belief_events": "6",  # three adds, a supersede, an add and its forget
        "belief_sources": "5",
        "belief_twins": "0",  # no two of her statements say the same thing
        "episodes": "5",  # every message of her four turns, the hidden one included
        "memory_jobs": "1",
    }
    assert terms > 0 and episode_terms > 0
    assert f"<b>{22 + terms + episode_terms}</b>" in text
    for table in (t for t in USER_TABLES if t != "memory_users"):
        assert rows(env, f"SELECT count(*) FROM {table} WHERE user_id = %s", ALICE) == [(0,)]
    [(erased_at,)] = rows(env, "SELECT erased_at FROM memory_users WHERE user_id = %s", ALICE)
    assert erased_at is not None
    assert rows(env, "SELECT count(*) FROM beliefs WHERE user_id = %s", BOB) == [(1,)]
    assert "This user was erased" in client.get(f"/user?u={ALICE}").text
    assert post(client, "/erase", csrf, u=ALICE, confirm=ALICE)[0] == 409


def test_actions_need_post(client: TestClient, seeded: Seeded) -> None:
    for path in ("/correct", "/forget", "/retry"):
        response = client.get(f"{path}?u={ALICE}&id={seeded.sf}")
        assert response.status_code == 405 and "not accepted here" in response.text
