"""Secrets never reach a repr, str, log line or exception message (invariant 8)."""

from __future__ import annotations

import logging

import pytest

from mem01session import Settings
from mem01session.db import Database
from mem01session.errors import ConfigError, DatabaseError
from mem01session.logs import get_logger
from mem01session.redaction import redact

PASSWORD = "pw-SENTINEL-7f3a"
API_KEY = "sk-test-SENTINEL-9c1e77aa"


def _env(**extra: str) -> dict[str, str]:
    return {
        "MEM01_DATABASE_URL": f"postgresql://alice:{PASSWORD}@127.0.0.1:1/mem",
        "OPENAI_API_KEY": API_KEY,
        **extra,
    }


def assert_clean(text: str) -> None:
    assert PASSWORD not in text
    assert API_KEY not in text


def test_settings_repr_and_str_hide_secrets() -> None:
    s = Settings.from_env(_env())
    assert_clean(repr(s))
    assert_clean(str(s))
    assert "alice:***@" in repr(s)
    assert s.openai_api_key == API_KEY  # still usable by the code that needs it


def test_database_url_falls_back_to_DATABASE_URL() -> None:
    s = Settings.from_env({"DATABASE_URL": "postgresql://db.example/x"})
    assert s.database_url == "postgresql://db.example/x"


def test_config_errors_name_the_variable_and_hide_the_password() -> None:
    with pytest.raises(ConfigError) as info:
        Settings.from_env({"MEM01_DATABASE_URL": f"mysql://bob:{PASSWORD}@h/db"})
    assert "MEM01_DATABASE_URL" in str(info.value)
    assert_clean(str(info.value))
    with pytest.raises(ConfigError, match="MEM01_EMBEDDING_DIM"):
        Settings.from_env({"MEM01_EMBEDDING_DIM": "lots"})


async def test_connection_failure_hides_the_password(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    settings = Settings.from_env(_env())
    with pytest.raises(DatabaseError) as info:
        await Database.open(settings.database_url)
    chain: list[BaseException] = []
    exc: BaseException | None = info.value
    while exc is not None:
        chain.append(exc)
        exc = exc.__cause__ or exc.__context__
    for e in chain:
        assert_clean(str(e))
        assert_clean(repr(e))
    assert_clean(caplog.text)


def test_library_logs_are_scrubbed(caplog: pytest.LogCaptureFixture) -> None:
    Settings.from_env(_env())  # registers both secrets
    caplog.set_level(logging.INFO)
    log = get_logger("mem01session.test")
    log.info("connecting with %s and key %s", f"postgresql://a:{PASSWORD}@h/d", API_KEY)
    assert "connecting with" in caplog.text
    assert_clean(caplog.text)


@pytest.mark.parametrize(
    "text",
    [
        f"postgresql://alice:{PASSWORD}@h:5432/db",
        f"host=h password={PASSWORD} dbname=x",
        f"postgresql://h/db?password={PASSWORD}&sslmode=require",
        "Authorization: Bearer sk-unregistered0123456789",
    ],
)
def test_redact_masks_unregistered_shapes(text: str) -> None:
    out = redact(text)
    assert PASSWORD not in out
    assert "sk-unregistered0123456789" not in out
