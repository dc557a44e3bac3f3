"""``mem01session reembed`` after switching the embedding model (real PostgreSQL, MiniLM)."""

from __future__ import annotations

import pytest

from tests.cli.test_inspector import ALICE, Seeded, env, failed, ok, seeded

__all__ = ["env", "seeded"]


@pytest.mark.slow
def test_reembed_converts_what_another_model_made_once(
    seeded: Seeded, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEM01_EMBEDDING_MODEL", "all-MiniLM-L6-v2")  # the application switched
    assert ok("reembed", "--dry-run").strip() == (
        "4 record(s) would be re-embedded with all-MiniLM-L6-v2"
    )
    assert "3 record(s) of user 'alice' would be" in ok("reembed", "-u", ALICE, "--dry-run")
    assert ok("reembed", "--user", ALICE, "--batch", "2").strip() == (
        "re-embedded 3 record(s) of user 'alice' with all-MiniLM-L6-v2"
    )
    assert ok("reembed").strip() == "re-embedded 1 record(s) with all-MiniLM-L6-v2"
    assert ok("reembed").strip() == "no record(s) need re-embedding with all-MiniLM-L6-v2"
    assert failed("reembed", "--batch", "0") == "error: --batch must be a positive integer, got 0"
