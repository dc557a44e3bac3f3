"""Choosing the extractor."""

from __future__ import annotations

import logging

import pytest

from mem01session import Settings
from mem01session.errors import ConfigError
from mem01session.extraction import OpenAIExtractor, RuleExtractor, default_extractor

KEY = "sk-test-default-000000000"


def test_openai_when_a_key_is_set(caplog: pytest.LogCaptureFixture, fresh_notices: None) -> None:
    caplog.set_level(logging.INFO, logger="mem01session")
    extractor = default_extractor(Settings(openai_api_key=KEY, llm_model="gpt-x"))
    assert isinstance(extractor, OpenAIExtractor) and extractor.model == "gpt-x"
    assert any("extraction: OpenAI" in r.getMessage() for r in caplog.records)
    assert all(KEY not in r.getMessage() for r in caplog.records)


def test_rules_without_a_key_and_it_says_so_once(
    caplog: pytest.LogCaptureFixture, fresh_notices: None
) -> None:
    caplog.set_level(logging.INFO, logger="mem01session")
    assert isinstance(default_extractor(Settings()), RuleExtractor)
    assert isinstance(default_extractor(Settings()), RuleExtractor)
    (record,) = [r for r in caplog.records if "rule extractor" in r.getMessage()]
    assert record.levelno == logging.WARNING and "no OPENAI_API_KEY" in record.getMessage()


def test_the_memory_reads_the_environment_once_when_given_no_settings(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from mem01session import Memory

    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    memory = Memory()  # the environment is read here, once
    monkeypatch.delenv("OPENAI_API_KEY")
    assert isinstance(memory.extractor, OpenAIExtractor)


def test_can_be_told_explicitly() -> None:
    assert isinstance(default_extractor(Settings(openai_api_key=KEY), kind="rules"), RuleExtractor)
    local = Settings(openai_base_url="http://localhost:11434/v1")
    assert isinstance(default_extractor(local, kind="openai"), OpenAIExtractor)
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        default_extractor(Settings(), kind="openai")
    with pytest.raises(ConfigError, match="unknown extractor kind"):
        default_extractor(Settings(), kind="magic")
