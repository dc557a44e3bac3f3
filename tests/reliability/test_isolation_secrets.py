"""Tenant isolation across the engine, the session and the CLI; secrets never leak."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import httpx2
import pytest
from agents.memory import SQLiteSession
from click.testing import Result
from typer.testing import CliRunner

from mem01session import Memory, Settings
from mem01session.cli import app
from mem01session.db import Database
from mem01session.embeddings import HashingEmbedder
from mem01session.engine import BeliefEngine, RecallRequest
from mem01session.engine.ops import Op, Provenance
from mem01session.errors import BeliefNotFoundError, DatabaseError, InvalidOpError
from mem01session.extraction import OpenAIExtractor
from mem01session.session import Mem01Session
from tests.conftest import TEST_DIM
from tests.extraction.test_openai_extractor import completion
from tests.reliability.harness import all_text, say, snapshot

A, B = "alice-tenant", "bob-tenant"


async def cli(*args: str) -> Result:
    return await asyncio.to_thread(CliRunner().invoke, app, list(args))


async def test_user_b_never_reads_changes_or_erases_user_a(
    engine: BeliefEngine,
    memory: Memory,
    db_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pool = engine.db.sa_engine
    prov = Provenance(session_id="a-conv", extractor="test")
    r = await engine.apply(
        A,
        [Op.add("Lives in Zanzibar", key="home.city"), Op.add("Has a cat named Mo")],
        provenance=prov,
    )
    a_ids = [c.belief_id for c in r.changes]
    await engine.apply(B, [Op.add("Likes chess")], provenance=Provenance(extractor="test"))
    a_before = await snapshot(pool, A)

    # Engine: B guesses A's ids.
    for bid in a_ids:
        with pytest.raises(BeliefNotFoundError):
            await engine.get(B, bid)
        with pytest.raises(BeliefNotFoundError):
            await engine.forget(B, bid)
        with pytest.raises(BeliefNotFoundError):
            await engine.correct(B, bid, "Lives in Bobville")
        for op in (
            Op.update(bid, "hacked"),
            Op.supersede(bid, "hacked"),
            Op.invalidate(bid, "hacked"),
            Op.merge([bid, a_ids[0] if bid != a_ids[0] else a_ids[1]], "hacked"),
        ):
            with pytest.raises(InvalidOpError, match="does not exist for this user"):
                await engine.apply(B, [op], provenance=prov)
        assert await engine.ledger(B, belief_id=bid) == []
    assert all(b.user_id == B for b in await engine.history(B))
    for query in ("Zanzibar", "cat", "where do I live"):
        result = await engine.recall(B, RecallRequest(query, include_history=True))
        assert "Zanzibar" not in result.text and "Mo" not in result.text
        assert all(s.belief.user_id == B for s in await engine.search(B, query))

    # Session as B.
    s = Mem01Session(
        "b-conv",
        B,
        inner=SQLiteSession("b-conv", tmp_path / "t.sqlite"),
        memory=memory,
        strict=True,
    )
    model = await say(s, "Where do I live? Do I have a cat?")
    assert "Zanzibar" not in str(model.calls[0].input)
    assert all(b.user_id == B for b in await s.memory.beliefs(s.user_id, include_inactive=True))
    for bid in a_ids:
        with pytest.raises(BeliefNotFoundError):
            await s.memory.correct(s.user_id, bid, "x")
        with pytest.raises(BeliefNotFoundError):
            await s.memory.forget(s.user_id, bid)
    await s.memory.erase(s.user_id, reinstate=True)
    await s.aclose()

    # CLI as B.
    monkeypatch.setenv("MEM01_DATABASE_URL", db_url)
    monkeypatch.setenv("MEM01_EMBEDDING_MODEL", HashingEmbedder(TEST_DIM).name)
    await engine.apply(B, [Op.add("Likes chess")], provenance=Provenance(extractor="test"))
    for args in (
        ("beliefs", "list", "--user", B, "--all", "--json"),
        ("beliefs", "history", "--user", B),
        ("recall", "--user", B, "Zanzibar cat"),
        ("jobs", "list", "--user", B),
    ):
        out = (await cli(*args)).output
        assert "Zanzibar" not in out and "Has a cat" not in out, args
    for bid in a_ids:
        shown = await cli("beliefs", "show", str(bid), "--user", B)
        assert shown.exit_code == 1 and "Zanzibar" not in shown.output
        forgot = await cli("forget", "--user", B, str(bid))
        assert forgot.exit_code == 1 and f"no belief #{bid}" in forgot.output
    erased = await cli("erase", "--user", B, "--yes")
    assert erased.exit_code == 0, erased.output

    assert await snapshot(pool, A) == a_before  # nothing of A changed, whatever B did


# -- secrets -----------------------------------------------------------------------------

PASSWORD = "pw-SENTINEL-5b1d9e"
API_KEY = "sk-test-SENTINEL-77c2aa90"
PLANTED = (
    "my database password is hunter2-SENTINEL-f00d",
    f"here is my key {API_KEY}, keep it",
    "use token ghp_SENTINELabcdefghijklmnopqrstuvwxyz0123",
)
SENTINELS = (PASSWORD, API_KEY, "hunter2-SENTINEL-f00d", "ghp_SENTINELabcdefghij")


def assert_clean(text: str, where: str) -> None:
    for sentinel in SENTINELS:
        assert sentinel not in text, f"{sentinel!r} leaked into {where}"


async def test_secrets_never_leak(
    db_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    caplog.set_level(logging.DEBUG)
    dsn = db_url.replace("postgres:@", f"postgres:{PASSWORD}@", 1)
    assert PASSWORD in dsn  # the embedded server trusts local sockets: any password works
    settings = Settings(database_url=dsn, openai_api_key=API_KEY, home=tmp_path)
    emb = HashingEmbedder(TEST_DIM)

    def answer(request: httpx2.Request) -> httpx2.Response:
        assert request.headers["authorization"] == f"Bearer {API_KEY}"  # it is used ...
        return completion(
            '{"ops": [{"op": "ADD", "content": "Uses a password manager", '
            '"target": null, "targets": [], "key": null, "confidence": null, '
            f'"evidence": "{PLANTED[0]}", "reason": null, "valid_from": null}}]}}'
        )

    extractor = OpenAIExtractor(
        settings, http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(answer))
    )
    memory = await Memory.open(settings, embedder=emb, extractor=extractor)
    engine = await memory.engine()
    db = engine.db
    session = Mem01Session(
        "conv", "sam", inner=SQLiteSession("conv", tmp_path / "t.sqlite"), memory=memory
    )
    for line in PLANTED:
        await say(session, line)
    assert await session.flush_memory(timeout=30)
    texts = [repr(x) for x in (session, memory, engine, db, settings, extractor)]
    texts.append(str(settings))
    # A failure that carries the DSN: a server that is not there.
    bad = Settings(database_url=dsn.replace("?host=", "?port=1&host=/nonexistent&x="))
    with pytest.raises(Exception) as info:
        await Database.open(bad.database_url, embedding_model=emb.name, embedding_dim=emb.dim)
    texts += [str(info.value), repr(info.value)]
    unreachable = Memory(bad, embedder=emb)
    with pytest.raises(DatabaseError) as info2:
        await unreachable.beliefs("sam", include_inactive=True)
    texts += [str(info2.value), repr(info2.value), repr(unreachable)]
    await unreachable.aclose()
    # The CLI with the same secrets in its environment.
    monkeypatch.setenv("MEM01_DATABASE_URL", dsn)
    monkeypatch.setenv("MEM01_EMBEDDING_MODEL", HashingEmbedder(TEST_DIM).name)
    for args in (
        ("beliefs", "list", "--user", "sam", "--all"),
        ("beliefs", "history", "--user", "sam"),
        ("jobs", "list"),
        ("forget", "--user", "sam", "99999"),
        ("db", "current"),
    ):
        texts.append((await cli(*args)).output)
    monkeypatch.setenv("MEM01_DATABASE_URL", bad.database_url or "")
    texts.append((await cli("beliefs", "list", "--user", "sam")).output)
    texts.append(await all_text(db.sa_engine))  # every row of every table
    await memory.aclose()
    for i, text in enumerate(texts):
        assert_clean(text, f"output #{i}")
    assert_clean(caplog.text, "the logs")
    assert "Uses a password manager" in texts[-1]  # the belief itself was stored
