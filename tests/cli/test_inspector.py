"""The inspector commands (`beliefs`, `recall`, `forget`, `erase`, `jobs`) on a real database."""

from __future__ import annotations

import asyncio
import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import text
from typer.testing import CliRunner, Result

import mem01session.cli._reads as reads_module
from mem01session import Memory
from mem01session.cli import app
from mem01session.cli._console import console
from mem01session.config import Settings
from mem01session.embeddings import HashingEmbedder
from mem01session.engine import Utterance
from mem01session.engine.ops import Op, Provenance
from mem01session.queue import JobStore
from mem01session.queue.turns import TurnMessage
from tests.conftest import TEST_DIM
from tests.pg import locked
from tests.zones import said_in_los_angeles

runner = CliRunner()

ALICE = "alice"
BOB = "bob"
MONDAY = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
WEDNESDAY = MONDAY + timedelta(days=2)


@dataclass(frozen=True)
class Seeded:
    nyc: int
    rent: int
    sf: int
    bob_tea: int
    failed_job: int


async def _seed() -> Seeded:
    async with Memory(Settings.from_env()) as memory:
        engine = await memory.engine()
        monday = Provenance(session_id="conv-monday", observed_at=MONDAY, extractor="test")
        r1 = await engine.apply(
            ALICE,
            [
                Op.add("Lives in New York City", key="home", evidence="I live in New York City"),
                Op.add("Pays $2,400 a month in rent [approx]", evidence="I pay $2,400 a month"),
            ],
            provenance=monday,
        )
        nyc, rent = (c.belief_id for c in r1.changes)
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
                session_id="conv-wednesday", observed_at=WEDNESDAY, extractor="test"
            ),
        )
        sf = r2.changes[0].belief_id
        r3 = await engine.apply(
            BOB, [Op.add("Likes [bold]green tea[/bold]")], provenance=Provenance("conv-bob")
        )
        store = JobStore(engine.db)
        job_id = await store.enqueue(
            ALICE, "conv-friday", [TurnMessage("user", "hello")], now=WEDNESDAY
        )
        [job] = await store.claim("w1", now=WEDNESDAY, lease=timedelta(minutes=1))
        assert job.id == job_id
        await store.fail(job, "w1", "extractor exploded", now=WEDNESDAY, retry_at=None)
        return Seeded(nyc, rent, sf, r3.changes[0].belief_id, job_id)


@pytest.fixture
def env(db_url: str, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("MEM01_DATABASE_URL", db_url)
    monkeypatch.setenv("MEM01_EMBEDDING_MODEL", HashingEmbedder(TEST_DIM).name)
    monkeypatch.setenv("COLUMNS", "250")  # wide tables: no wrapped cells in assertions
    return db_url


@pytest.fixture
def seeded(env: str) -> Seeded:
    return asyncio.run(_seed())


def ok(*args: str) -> str:
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.output


def failed(*args: str) -> str:
    """Run a command that must fail cleanly: exit 1, one error line, no traceback."""
    result = runner.invoke(app, list(args))
    assert result.exit_code == 1, result.output
    assert_clean(result)
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:"), result.output
    return lines[0]


def assert_clean(result: Result) -> None:
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


# -- beliefs --------------------------------------------------------------------------


def test_list_shows_current_beliefs_only(seeded: Seeded) -> None:
    out = ok("beliefs", "list", "--user", ALICE)
    assert "Lives in San Francisco" in out
    # Brackets in a belief are printed, not eaten as markup.
    assert "Pays $2,400 a month in rent [approx]" in out
    assert "New York" not in out
    assert "conv-wednesday" in out and "I moved to San Francisco last weekend" in out


def test_list_all_shows_status_and_validity(seeded: Seeded) -> None:
    out = ok("beliefs", "list", "--user", ALICE, "--all")
    nyc_line = next(line for line in out.splitlines() if "Lives in New York City" in line)
    assert "superseded" in nyc_line and f"-> #{seeded.sf}" in nyc_line
    assert "2026-03-02 to 2026-03-04" in nyc_line
    sf_line = next(line for line in out.splitlines() if "Lives in San Francisco" in line)
    assert "active" in sf_line and "since 2026-03-04" in sf_line


def test_list_json_parses(seeded: Seeded) -> None:
    data = json.loads(ok("beliefs", "list", "--user", ALICE, "--all", "--json"))
    by_id = {b["id"]: b for b in data}
    assert set(by_id) == {seeded.nyc, seeded.rent, seeded.sf}
    assert by_id[seeded.nyc]["status"] == "superseded"
    assert by_id[seeded.nyc]["superseded_by"] == seeded.sf
    assert by_id[seeded.nyc]["valid_to"].startswith("2026-03-04")
    [src] = by_id[seeded.sf]["sources"]
    assert src["session_id"] == "conv-wednesday"
    assert src["evidence"] == "I moved to San Francisco last weekend"
    current = json.loads(ok("beliefs", "list", "--user", ALICE, "--json"))
    assert {b["id"] for b in current} == {seeded.rent, seeded.sf}


def test_history_is_the_ledger_in_order(seeded: Seeded) -> None:
    out = ok("beliefs", "history", "--user", ALICE)
    ops = re.findall(r"\b(ADD|SUPERSEDE)\b", out)
    assert ops == ["ADD", "ADD", "SUPERSEDE"]
    line = next(line for line in out.splitlines() if "SUPERSEDE" in line)
    assert '"Lives in New York City" active -> ' in line
    assert f'#{seeded.sf} "Lives in San Francisco" active' in line
    assert "moved" in line and f"(#{seeded.nyc})" in line


def test_show_has_provenance_and_versions(seeded: Seeded) -> None:
    out = ok("beliefs", "show", str(seeded.nyc), "--user", ALICE)
    assert "Lives in New York City" in out
    assert "superseded" in out and f"-> #{seeded.sf}" in out
    assert "conv-monday" in out and "I live in New York City" in out
    assert "2026-03-02 09:00" in out
    assert re.findall(r"\b(ADD|SUPERSEDE)\b", out) == ["ADD", "SUPERSEDE"]


# -- recall ---------------------------------------------------------------------------


def test_recall_prints_the_block_and_its_budget(seeded: Seeded) -> None:
    out = ok("recall", "--user", ALICE, "where do I live now?")
    assert "<memory>" in out and "</memory>" in out
    assert "- Lives in San Francisco\n" in out
    assert "New York" not in out
    assert re.search(r"tokens: \d+ of 800 \(tokenizer \S+\)", out)


def test_recall_explain_and_history(seeded: Seeded) -> None:
    out = ok("recall", "--user", ALICE, "where do I live", "--explain", "--history")
    assert "- Lives in New York City (until " in out
    lines = out.splitlines()
    at = next(i for i, line in enumerate(lines) if f"#{seeded.sf} Lives in San Francisco" in line)
    assert re.match(r"\s*\d+\. #\d+ Lives in San Francisco \(active\)$", lines[at].rstrip())
    scores = lines[at + 1].split()
    assert scores[0::2] == ["fused", "relevance", "recency", "confidence"]
    assert all(re.fullmatch(r"\d\.\d{3}", v) for v in scores[1::2])
    retrievers = lines[at + 2].strip()
    assert re.fullmatch(r"vector (\d\.\d{3} \(rank \d+\)|not found)  text .+", retrievers)
    nyc = next(line for line in lines if f"#{seeded.nyc} Lives in New York City" in line)
    assert "(superseded)" in nyc
    assert "fused = relevance x (0.96 + 0.04 recency) x (0.92 + 0.08 confidence)" in " ".join(
        out.split()
    )


async def _said(user: str) -> None:
    """A turn of ``user`` whose words are kept as an episode, with a belief drawn from
    another of its messages."""
    async with Memory(Settings.from_env()) as memory:
        engine = await memory.engine()
        await engine.apply(
            user,
            [Op.add("Has a cat named Miso", evidence="I have a cat named Miso.")],
            provenance=Provenance(
                session_id="conv-pets", job_id=1, observed_at=MONDAY, extractor="test"
            ),
            utterances=[
                Utterance(0, "user", "I have a cat named Miso.", context="Any pets at home?"),
                Utterance(1, "user", "My neighbour's long-haired cat keeps visiting my balcony."),
            ],
        )


def test_recall_explain_lists_quotes_and_fits_80_columns(
    env: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    asyncio.run(_said("carol"))
    monkeypatch.setenv("COLUMNS", "80")  # what a pipe gets
    out = ok("recall", "--user", "carol", "which cat keeps visiting the balcony?", "--explain")
    assert max(len(line) for line in out.splitlines()) <= 80
    assert "1 belief and 1 quote of " in " ".join(out.split())
    lines = out.splitlines()
    quote = next(i for i, line in enumerate(lines) if re.match(r"\s*\d+\. e#\d+ ", line))
    entry = " ".join(" ".join(lines[quote : quote + 4]).split())
    said = '"My neighbour\'s long-haired cat keeps visiting my balcony."'
    assert said + " (said 2026-03-02 in conv-pets)" in entry
    assert re.search(r"fused \d\.\d{3} relevance \d\.\d{3} recency \d\.\d{3} vector", entry)
    assert "confidence" not in entry.split(" vector ")[0]  # a quote has none
    belief = next(line for line in lines if "Has a cat named Miso (active)" in line)
    assert re.match(r"\s*\d+\. #\d+ Has a cat", belief)
    assert "said in the days asked about" not in out
    dated = ok("recall", "--user", "carol", "which cat came on March 2?", "--explain")
    assert re.search(r"said in the days asked about \(rank \d\)", " ".join(dated.split()))


def test_episodes_list_shows_what_each_message_answered(
    env: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    asyncio.run(_said("carol"))
    monkeypatch.setenv("COLUMNS", "200")
    lines = ok("episodes", "list", "--user", "carol").splitlines()
    miso = next(i for i, line in enumerate(lines) if "I have a cat named Miso." in line)
    assert "after: Any pets at home?" in lines[miso + 1]  # under the words it came before
    assert sum("after:" in line for line in lines) == 1
    listed = json.loads(ok("episodes", "list", "--user", "carol", "--json"))
    assert [e["context"] for e in listed] == ["Any pets at home?", None]


def test_recall_budget_limits_the_block(seeded: Seeded) -> None:
    out = ok("recall", "--user", ALICE, "rent", "--budget", "5")
    assert "no memory block" in out and "of 5" in out


# -- users --------------------------------------------------------------------------


def test_users_lists_counts_activity_and_erasure(seeded: Seeded) -> None:
    asyncio.run(_said("carol"))
    out = ok("users")
    rows = {line.split()[1]: line for line in out.splitlines() if line.startswith("│ ")}
    assert set(rows) == {ALICE, BOB, "carol"}
    assert re.search(r"│\s+2 of 3 │\s+0 │ \d{4}-\d\d-\d\d \d\d:\d\d\+00:00 │ -", rows[ALICE])
    assert re.search(r"│\s+1 │\s+2 │ ", rows["carol"])  # episodes: carol's two messages
    ok("erase", "--user", BOB, "--yes")
    bob = next(line for line in ok("users").splitlines() if f" {BOB} " in line)
    assert "erased 20" in bob
    data = {u["user_id"]: u for u in json.loads(ok("users", "--json"))}
    assert data[ALICE]["beliefs"] == {"active": 2, "superseded": 1}
    assert data[ALICE]["current_beliefs"] == 2 and data[ALICE]["erased_at"] is None
    assert data[BOB]["erased_at"] is not None and data["carol"]["episodes"] == 2
    assert [u["user_id"] for u in json.loads(ok("users", "--contains", "CAR", "--json"))] == [
        "carol"
    ]
    assert "no users with durable memory whose id contains 'zz'" in ok("users", "--contains", "zz")


def test_users_hides_the_episodes_column_when_nobody_has_any(seeded: Seeded) -> None:
    out = ok("users")
    assert "episodes" not in out and "alice" in out


# -- forget and erase -----------------------------------------------------------------


def test_forget_invalidates_and_keeps_history(seeded: Seeded) -> None:
    out = ok("forget", "--user", ALICE, str(seeded.rent), "--reason", "wrong amount")
    assert "forgot" in out and "invalidated" in out and "wrong amount" in out
    shown = ok("beliefs", "show", str(seeded.rent), "--user", ALICE)
    assert "invalidated" in shown and "FORGET" in shown and "wrong amount" in shown
    assert "Pays $2,400" not in ok("beliefs", "list", "--user", ALICE)
    again = failed("forget", "--user", ALICE, str(seeded.rent))
    assert "already invalidated" in again


def test_erase_needs_yes_then_prints_the_receipt(seeded: Seeded) -> None:
    refused = failed("erase", "--user", ALICE)
    assert "--yes" in refused
    assert "Lives in San Francisco" in ok("beliefs", "list", "--user", ALICE)

    out = ok("erase", "--user", ALICE, "--yes")
    counts = dict(
        re.findall(
            r"(beliefs|belief_events|belief_sources|belief_terms|memory_jobs)\s*\S\s*(\d+)", out
        )
    )
    terms = int(counts.pop("belief_terms"))  # the words of the two active beliefs
    assert counts == {
        "beliefs": "3",
        "belief_events": "3",
        "belief_sources": "3",
        "memory_jobs": "1",
    }
    assert terms > 0 and re.search(rf"total\s*\S\s*{10 + terms}\b", out)
    assert "refused until: mem01session reinstate --user alice" in " ".join(out.split())
    assert "no beliefs for user 'alice'" in ok("beliefs", "list", "--user", ALICE, "--all")
    assert json.loads(ok("beliefs", "list", "--user", ALICE, "--all", "--json")) == []
    # Bob is untouched.
    assert "green tea" in ok("beliefs", "list", "--user", BOB)


def test_reinstate_lifts_the_erase_once(seeded: Seeded) -> None:
    ok("erase", "--user", ALICE, "--yes")
    out = ok("reinstate", "--user", ALICE)
    assert re.fullmatch(
        r"reinstated user 'alice' \(erased at \S+ \S+\); new writes for this user are "
        r"accepted again",
        " ".join(out.split()),
    )
    # Nothing erased comes back; writes are accepted again.
    assert json.loads(ok("beliefs", "list", "--user", ALICE, "--all", "--json")) == []
    asyncio.run(_apply(ALICE, "Lives in Porto"))
    assert "Lives in Porto" in ok("beliefs", "list", "--user", ALICE)
    # Reinstating a user that is not erased (any more, or ever) exits 1.
    assert failed("reinstate", "--user", ALICE) == (
        "error: user 'alice' is not erased; nothing to reinstate"
    )
    assert (
        failed("reinstate", "--user", BOB)
        == "error: user 'bob' is not erased; nothing to reinstate"
    )
    assert failed("reinstate", "--user", "nobody").startswith("error: user 'nobody' is not erased")


async def _apply(user: str, text: str) -> None:
    async with Memory(Settings.from_env()) as memory:
        engine = await memory.engine()
        await engine.apply(user, [Op.add(text)], provenance=Provenance(extractor="test"))


REFUSED_TEXT = "my PIN is 4417 and I live at 12 Secret Lane"


async def _refused_job(user: str) -> int:
    """A failed job of an erased user, its turn's text still in it: what a job that slipped
    in while the erase committed, or a row from an older version, looks like."""
    async with Memory(Settings.from_env()) as memory:
        engine = await memory.engine()
        async with engine.db.sa_engine.begin() as conn:
            job_id = await conn.scalar(
                text(
                    "INSERT INTO memory_jobs (user_id, session_id, payload, idempotency_key, "
                    "status, last_error) VALUES (:u, 'conv-late', CAST(:p AS jsonb), 'late', "
                    "'failed', 'UserErasedError: erased') RETURNING id"
                ),
                {
                    "u": user,
                    "p": json.dumps(
                        {
                            "messages": [{"role": "user", "text": REFUSED_TEXT}],
                            "observed_at": WEDNESDAY.isoformat(),
                        }
                    ),
                },
            )
        return int(job_id)


def test_jobs_retry_refuses_an_erased_users_job(seeded: Seeded) -> None:
    ok("erase", "--user", ALICE, "--yes")
    job_id = asyncio.run(_refused_job(ALICE))

    assert failed("jobs", "retry", str(job_id)) == (
        f"error: job #{job_id} belongs to user 'alice', whose memory is erased; not retried"
    )
    line = next(line for line in ok("jobs", "list").splitlines() if f"#{job_id}" in line)
    assert "failed" in line  # still failed, not requeued

    ok("reinstate", "--user", ALICE)
    assert "pending" in ok("jobs", "retry", str(job_id))


def test_jobs_list_never_prints_the_turn_text(seeded: Seeded) -> None:
    ok("erase", "--user", ALICE, "--yes")
    asyncio.run(_refused_job(ALICE))
    for args in (["jobs", "list"], ["jobs", "list", "--failed"], ["jobs", "list", "-u", ALICE]):
        out = ok(*args)
        assert "conv-late" in out
        assert "4417" not in out and "Secret Lane" not in out


# -- jobs -----------------------------------------------------------------------------


def test_jobs_list_and_retry(seeded: Seeded) -> None:
    out = ok("jobs", "list", "--failed")
    line = next(line for line in out.splitlines() if f"#{seeded.failed_job}" in line)
    assert "failed" in line and "alice" in line and "extractor exploded" in line
    assert f"#{seeded.failed_job}" in ok("jobs", "list", "--user", ALICE, "--limit", "1")

    out = ok("jobs", "retry", str(seeded.failed_job))
    assert f"job #{seeded.failed_job}" in out and "pending" in out
    assert "no failed jobs" in ok("jobs", "list", "--failed")
    line = next(line for line in ok("jobs", "list").splitlines() if f"#{seeded.failed_job}" in line)
    assert "pending" in line

    assert failed("jobs", "retry", str(seeded.failed_job)) == (
        f"error: no failed job #{seeded.failed_job}"
    )


def test_jobs_list_as_json(seeded: Seeded) -> None:
    listed = json.loads(ok("jobs", "list", "--failed", "--json"))
    [job] = [j for j in listed if j["id"] == seeded.failed_job]
    assert job["user_id"] == ALICE and job["status"] == "failed" and job["attempts"] >= 1
    assert "extractor exploded" in job["last_error"] and job["notes"] == []
    assert set(job) >= {"session_id", "created_at", "updated_at", "usage"}  # never the turn


# -- bad input ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["beliefs", "list", "--user", "nobody"],
        ["beliefs", "history", "--user", "nobody"],
        ["beliefs", "show", "1", "--user", "nobody"],
        ["recall", "--user", "nobody", "anything"],
        ["forget", "--user", "nobody", "1"],
        ["erase", "--user", "nobody", "--yes"],
        ["jobs", "list", "--user", "nobody"],
    ],
)
def test_unknown_user_is_refused(seeded: Seeded, args: list[str]) -> None:
    assert failed(*args) == "error: unknown user 'nobody': no memory recorded for this user"


def test_markup_in_a_user_id_is_printed_as_is(seeded: Seeded) -> None:
    line = failed("beliefs", "list", "--user", "[red]x[/red]")
    assert line == "error: unknown user '[red]x[/red]': no memory recorded for this user"


# What acts on a terminal: an SGR colour, an OSC retitling the window (ended by BEL), a
# carriage return, a C1 CSI, a right-to-left override and an isolate.
ACTIVE = ("\x1b", "\x07", "\r", "\x9b", "\u202e", "\u2066", "\u2069")
HOSTILE_SESSION = "conv-\x1b[2J"


async def _hostile(user: str) -> None:
    """A belief, its evidence, its episode, a ledger reason and a failed job, each holding
    characters that act on a terminal, and Chinese and an emoji that must stay as they are."""
    async with Memory(Settings.from_env()) as memory:
        engine = await memory.engine()
        said = "I live in \u202eocsicnarF naS\x1b]0;pwned\x07 \u5317\u4eac \U0001f600"
        result = await engine.apply(
            user,
            [Op.add("Lives in San Francisco", key="home\u2066x\u2069", evidence=said)],
            provenance=Provenance(
                session_id=HOSTILE_SESSION, job_id=1, observed_at=MONDAY, extractor="test"
            ),
            utterances=[Utterance(0, "user", said, context="Where \x1b]0;ctx\x07 now?")],
        )
        belief = result.changes[0].belief_id
        # Stored before writes refused control characters (or imported): shown escaped.
        await engine.db.direct.fetch(
            "UPDATE beliefs SET content = %(c)s WHERE id = %(id)s RETURNING id",
            {"c": "Lives in \u202eocsicnarF naS \x1b[31mred\x1b[0m\r\x9b2J", "id": belief},
        )
        await engine.forget(user, belief, "asked to \x1b[5mforget\u202e")
        store = JobStore(engine.db)
        await store.enqueue(user, HOSTILE_SESSION, [TurnMessage("user", "hi")], now=WEDNESDAY)
        [job] = await store.claim("w1", now=WEDNESDAY, lease=timedelta(minutes=1))
        await store.fail(job, "w1", "failed on \x1b[31m\u202e", now=WEDNESDAY, retry_at=None)


def test_words_from_a_conversation_never_act_on_the_terminal(env: str) -> None:
    """Terminal controls and bidi overrides in stored text are printed as escapes by every
    command that shows it; other scripts and emoji are printed as they are."""
    asyncio.run(_hostile("mallory"))
    [belief] = json.loads(ok("beliefs", "list", "--user", "mallory", "--all", "--json"))
    outputs = {
        "list": ok("beliefs", "list", "--user", "mallory", "--all"),
        "show": ok("beliefs", "show", str(belief["id"]), "--user", "mallory"),
        "history": ok("beliefs", "history", "--user", "mallory"),
        "episodes": ok("episodes", "list", "--user", "mallory"),
        "recall": ok("recall", "--user", "mallory", "where do I live?", "--explain", "--history"),
        "jobs": ok("jobs", "list", "--user", "mallory"),
        "users": ok("users"),
    }
    for name, out in outputs.items():
        assert not any(ch in out for ch in ACTIVE), (name, out)
    flat = {name: "".join(out.split()) for name, out in outputs.items()}  # cells wrap
    assert "\\u202eocsicnarFnaS" in flat["list"]
    assert "\\x1b[31mred\\x1b[0m\\x0d\\x9b2J" in flat["list"]
    assert "home\\u2066x\\u2069" in flat["show"]
    assert "\\x1b]0;pwned\\x07" in flat["episodes"] and "\u5317\u4eac\U0001f600" in flat["episodes"]
    assert "Where\\x1b]0;ctx\\x07now?" in flat["episodes"]  # the context too
    assert "asked to \\x1b[5mforget\\u202e" in " ".join(outputs["history"].split())
    assert "conv-\\x1b[2J" in flat["jobs"] and "\\u202e" in flat["jobs"]
    for listing in (["beliefs", "list", "--all"], ["episodes", "list"]):
        out = ok(*listing, "--user", "mallory", "--json")
        assert not any(ch in out for ch in ACTIVE), out
        assert "\\u202e" in out and "\u5317\u4eac" in out  # the same text once parsed:
        assert "\u202e" in json.dumps(json.loads(out), ensure_ascii=False)


def test_erasing_an_unknown_user_leaves_no_tombstone(seeded: Seeded) -> None:
    failed("erase", "--user", "nobody", "--yes")
    failed("beliefs", "list", "--user", "nobody")


@pytest.mark.parametrize("command", [["beliefs", "show"], ["forget"]])
def test_another_users_belief_looks_unknown(seeded: Seeded, command: list[str]) -> None:
    def message(belief_id: int) -> str:
        args = [*command, str(belief_id), "--user", ALICE]
        return failed(*args).replace(f"#{belief_id}", "#N")

    theirs = message(seeded.bob_tea)
    assert theirs == message(999_999) == "error: no belief #N for user 'alice'"
    assert "tea" not in theirs
    assert "green tea" in ok("beliefs", "list", "--user", BOB)


@pytest.mark.parametrize("budget", ["0", "-3"])
def test_bad_budget_is_refused(seeded: Seeded, budget: str) -> None:
    line = failed("recall", "--user", ALICE, "where", "--budget", budget)
    assert line == f"error: --budget must be a positive integer, got {budget}"


@pytest.mark.parametrize(
    "args",
    [
        ["beliefs", "show", "abc", "--user", ALICE],
        ["beliefs", "show", "0", "--user", ALICE],
        ["forget", "--user", ALICE, "1.5"],
        ["jobs", "retry", "x"],
    ],
)
def test_non_numeric_id_is_refused(seeded: Seeded, args: list[str]) -> None:
    assert "id must be a positive integer" in failed(*args)


def test_bad_limit_is_refused(seeded: Seeded) -> None:
    assert "--limit" in failed("beliefs", "list", "--user", ALICE, "--limit", "0")
    assert "--limit" in failed("jobs", "list", "--limit", "0")


# -- secrets and help -----------------------------------------------------------------

SENTINEL = "inspector-SENTINEL-pw"


@pytest.mark.parametrize(
    "args",
    [
        ["beliefs", "list", "--user", ALICE],
        ["recall", "--user", ALICE, "query"],
        ["erase", "--user", ALICE, "--yes"],
        ["reinstate", "--user", ALICE],
        ["jobs", "list"],
        ["jobs", "retry", "1"],
    ],
)
def test_unreachable_database_never_shows_the_password(
    monkeypatch: pytest.MonkeyPatch, args: list[str]
) -> None:
    monkeypatch.setenv("MEM01_DATABASE_URL", f"postgresql://u:{SENTINEL}@127.0.0.1:1/x")
    monkeypatch.setenv("MEM01_EMBEDDING_MODEL", HashingEmbedder(TEST_DIM).name)
    monkeypatch.delenv("COLUMNS", raising=False)  # 80 columns: the message must not wrap
    result = runner.invoke(app, args)
    assert result.exit_code == 1
    assert_clean(result)
    [line] = [line for line in result.output.splitlines() if line.strip()]
    assert line.startswith(
        "error: cannot connect to the database at postgresql://u:***@127.0.0.1:1/x "
        "(MEM01_DATABASE_URL): "
    )
    assert SENTINEL not in result.output


CLOSED_PORT_COMMANDS = [
    ["beliefs", "list", "--user", ALICE],
    ["beliefs", "history", "--user", ALICE],
    ["beliefs", "show", "1", "--user", ALICE],
    ["episodes", "list", "--user", ALICE],
    ["recall", "--user", ALICE, "query"],
    ["forget", "--user", ALICE, "1"],
    ["erase", "--user", ALICE, "--yes"],
    ["reinstate", "--user", ALICE],
    ["reembed"],
    ["users"],
    ["jobs", "list"],
    ["jobs", "retry", "1"],
    ["db", "upgrade", "--embedding-dim", "8"],
    ["db", "downgrade", "base"],
    ["db", "current"],
    ["db", "check"],
]


def test_a_closed_port_reads_the_same_from_every_command(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MEM01_DATABASE_URL", "postgresql://u:pw@127.0.0.1:1/x")
    monkeypatch.setenv("MEM01_EMBEDDING_MODEL", HashingEmbedder(TEST_DIM).name)
    lines = {" ".join(args): failed(*args) for args in CLOSED_PORT_COMMANDS}
    assert len(set(lines.values())) == 1, lines
    [line] = set(lines.values())
    assert line.startswith(
        "error: cannot connect to the database at postgresql://u:***@127.0.0.1:1/x "
        '(MEM01_DATABASE_URL): connection to server at "127.0.0.1", port 1 failed: '
    )


@pytest.mark.parametrize(
    "args",
    [
        ["beliefs", "list"],
        ["beliefs", "history"],
        ["beliefs", "show"],
        ["recall"],
        ["forget"],
        ["erase"],
        ["jobs", "list"],
        ["jobs", "retry"],
        ["reinstate"],
    ],
)
def test_every_command_has_help_with_an_example(args: list[str]) -> None:
    out = ok(*args, "--help")
    assert "Example: mem01session " + " ".join(args) in " ".join(out.split())


def test_a_read_the_database_does_not_answer_fails_and_says_so(
    seeded: Seeded, env: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A table locked elsewhere (a migration running, VACUUM FULL): the command fails with
    one line saying what happened, instead of waiting without a word."""
    monkeypatch.setattr(reads_module, "READ_TIMEOUT_SECONDS", 0.5)
    with locked(env, "beliefs"):
        result = runner.invoke(app, ["beliefs", "list", "--user", ALICE])
    assert result.exit_code == 1
    assert result.output.strip() == (
        "error: the database did not answer within 0.5 s (a table locked elsewhere, as by a "
        "migration running, or a server that stopped answering)"
    )
    assert "Lives in" in ok("beliefs", "list", "--user", ALICE)  # the lock gone, it reads


def test_recall_dates_in_the_users_recorded_zone_unless_told_another(seeded: Seeded) -> None:
    asyncio.run(said_in_los_angeles("lena"))
    out = ok("recall", "--user", "lena", "banker")
    assert '1 Mar 2026:\n- "I lost my job' in out and "days in America/Los_Angeles" in out
    out = ok("recall", "--user", "lena", "banker", "--timezone", "UTC")
    assert '2 Mar 2026:\n- "I lost my job' in out and "days in UTC" in out
    assert "days in UTC" in ok("recall", "--user", ALICE, "rent")  # no zone recorded
    line = failed("recall", "--user", "lena", "banker", "--timezone", "Mars/Olympus_Mons")
    assert line.startswith("error: --timezone must be an IANA time zone name such as")
    zones = {u["user_id"]: u["timezone"] for u in json.loads(ok("users", "--json"))}
    assert zones == {ALICE: None, BOB: None, "lena": "America/Los_Angeles"}
    lena = next(line for line in ok("users").splitlines() if " lena " in line)
    assert "│ America/Los_Angeles │" in lena


def test_users_at_a_terminals_width_keep_every_id(
    seeded: Seeded, monkeypatch: pytest.MonkeyPatch
) -> None:
    asyncio.run(said_in_los_angeles("a-rather-long-user-id-from-an-app"))
    monkeypatch.setenv("COLUMNS", "80")
    out = ok("users")
    assert max(len(line) for line in out.splitlines()) <= 80
    rows = [line for line in out.splitlines() if line.startswith("│ ")]
    assert {line.split()[1] for line in rows} >= {ALICE, BOB, "a-rather-long-us"}  # folded


def test_piped_output_keeps_every_cell_whole(env: str, monkeypatch: pytest.MonkeyPatch) -> None:
    long = "Collects " + ", ".join(f"vintage item number {i}" for i in range(12))

    async def remember() -> None:
        async with Memory(Settings.from_env()) as memory:
            engine = await memory.engine()
            await engine.apply("carol", [Op.add(long)], provenance=Provenance("conv-carol"))

    asyncio.run(remember())
    monkeypatch.delenv("COLUMNS")  # a pipe: no terminal width to fit
    console.cache_clear()
    try:
        out = ok("beliefs", "list", "--user", "carol")
    finally:
        console.cache_clear()
    assert any(long in line for line in out.splitlines())  # one line, nothing cut
