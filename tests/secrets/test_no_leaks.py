"""Secrets never reach a repr, str, log line or exception message (invariant 8)."""

from __future__ import annotations

import logging
import traceback
from pathlib import Path

import pytest

from mem01session import Settings
from mem01session.db import Database
from mem01session.errors import ConfigError, DatabaseError
from mem01session.logs import get_logger
from mem01session.secrets.redaction import dsn_secrets, redact

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


# -- finding 6 of issue 14: malformed URLs and values that are not URLs ------------------


async def test_a_password_with_an_unescaped_at_never_shows(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # libpq reads the password up to the first "@" and the rest as part of the host, and
    # says so: "failed to resolve host 'Passw0rd-8e4d@127.0.0.1'".
    caplog.set_level(logging.DEBUG)
    pieces = ("S3cret-5a0c", "Passw0rd-8e4d")
    url = f"postgresql://mem01:{pieces[0]}@{pieces[1]}@127.0.0.1:1/mem01"
    # Settings refuses it outright, without quoting it...
    with pytest.raises(ConfigError, match="more than one '@'") as refused:
        Settings.from_env({"MEM01_DATABASE_URL": url})
    # ... and a caller who hands it to the database directly gets it masked.
    with pytest.raises(DatabaseError) as info:
        await Database.open(url)
    # What anyone sees: the message, the traceback as printed, the logs. (The driver's
    # own exception stays reachable as the suppressed ``__context__``, never printed.)
    printed = "".join(traceback.format_exception(info.value))
    texts = [str(refused.value), str(info.value), repr(info.value), printed, caplog.text]
    assert "127.0.0.1" in str(info.value)  # the message still says where it went
    for text in texts:
        for piece in pieces:
            assert piece not in text


@pytest.mark.parametrize(
    ("dsn", "expected"),
    [
        # libpq's reading, urllib's reading, and the pieces between them
        ("postgresql://u:S3cret@Passw0rd@h/db", {"S3cret", "Passw0rd", "S3cret@Passw0rd"}),
        ("postgresql://u:S3cret/Passw0rd@h/db", {"S3cret", "Passw0rd", "S3cret/Passw0rd"}),
        ("postgresql://u:S3cret%40Pw@h/db", {"S3cret%40Pw", "S3cret@Pw", "S3cret", "Pw"}),
        ("postgresql://h/db?sslmode=require&password=S3cretPw", {"S3cretPw"}),
        ("host=h password='S3cretPw' dbname=x", {"S3cretPw"}),
        ("postgresql://u:pw@h/db?options=a@b", {"pw"}),
        ("postgresql://u@h/db", set()),
        # the client key's passphrase is libpq's other password (it was shown)
        (
            "postgresql://u@h/db?password=QSecret1&sslpassword=SSLsecret9",
            {"QSecret1", "SSLsecret9"},
        ),
    ],
)
def test_every_reading_of_a_dsn_password_is_registered(dsn: str, expected: set[str]) -> None:
    assert dsn_secrets(dsn) == expected


def test_a_value_that_is_not_a_url_is_not_echoed() -> None:
    for value, shape in (
        ("not a url at all S3cretPassw0rd", "not a URL"),
        ("S3cretPassw0rd", "not a URL"),
        ("mysql://bob:S3cretPassw0rd@h/db", "a mysql:// URL"),
    ):
        with pytest.raises(ConfigError) as info:
            Settings.from_env({"MEM01_DATABASE_URL": value})
        message = str(info.value)
        assert "S3cretPassw0rd" not in message and "not a url at" not in message
        assert "MEM01_DATABASE_URL" in message and "postgresql://" in message
        assert shape in message


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        ("'postgresql://h/db?password=S3cretPw'", "'postgresql://h/db?password=***'"),
        ('"postgresql://h/db?password=S3cretPw&x=1"', '"postgresql://h/db?password=***&x=1"'),
        ("host=h password='two words' dbname=x", "host=h password=*** dbname=x"),
        ("password = S3cretPw; next", "password = ***; next"),
        ("'postgresql://u:S3cret@Passw0rd@h:5432/db'", "'postgresql://u:***@h:5432/db'"),
        ("postgresql://u:pa/ss@h/db", "postgresql://u:***@h/db"),
        ("redis://:S3cretPw@cache:6379/0", "redis://:***@cache:6379/0"),
        ("see https://example.com:8080/path and mail me@example.com", None),
    ],
)
def test_structural_masks_keep_the_text_around_them(text: str, masked: str | None) -> None:
    assert redact(text) == (text if masked is None else masked)


async def test_a_failed_statement_is_described_without_its_parameters(db: Database) -> None:
    """Finding 6 of the reliability review: what users said rides in statement parameters,
    and a driver error's text carries them; the one-line account used in logs does not."""
    from sqlalchemy import text
    from sqlalchemy.exc import DBAPIError

    from mem01session.logs import describe

    said = "I live at 12 Hidden Lane"
    with pytest.raises(DBAPIError) as caught:
        async with db.sa_engine.connect() as conn:
            await conn.execute(text("SELECT 1 / 0 WHERE CAST(:said AS text) <> ''"), {"said": said})
    assert said in str(caught.value)  # SQLAlchemy's own text has it
    line = describe(caught.value)
    assert said not in line and "\n" not in line
    assert "division by zero" in line


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("postgresql://mem01:Pzq@ss%w0rd:/#?X@127.0.0.1:55432/mem01", "'#'"),
        ("postgresql://mem01:Pzq#ss9@127.0.0.1:5432/mem01", "'#'"),
        ("postgresql://mem01:Pzq?ss9@127.0.0.1:5432/mem01", "'@' after the host"),
        ("postgresql://mem01:Pzq/ss9@127.0.0.1:5432/mem01", "'@' after the host"),
        ("postgresql://mem01:Pzq@ss9@127.0.0.1:5432/mem01", "more than one '@'"),
        ("postgresql://mem01:Pzqss9@127.0.0.1:/mem01", "invalid port"),
        ("postgresql://mem01:Pzqss9@127.0.0.1:99999/mem01", "invalid port"),
        ("postgresql://mem01:Pzqss9@[::1/mem01", "not a valid URL"),
    ],
)
async def test_a_malformed_database_url_is_a_configuration_error_naming_the_setting(
    url: str, reason: str, tmp_path: Path
) -> None:
    from mem01session import Memory

    for opening in (
        lambda: Settings.from_env({"MEM01_DATABASE_URL": url}),
        lambda: Settings(database_url=url, home=tmp_path),
    ):
        with pytest.raises(ConfigError, match=r"^MEM01_DATABASE_URL ") as info:
            opening()
        assert reason in str(info.value) and "Pzq" not in str(info.value)
    with pytest.raises(ConfigError, match=r"^DATABASE_URL "):
        Settings.from_env({"DATABASE_URL": url})
    with pytest.raises(ConfigError, match=r"^MEM01_DATABASE_URL "):
        await Memory.open(Settings.from_env({"MEM01_DATABASE_URL": url}))


def test_both_of_libpqs_passwords_are_masked_where_a_url_or_dsn_is_shown() -> None:
    from mem01session.secrets.redaction import redact

    shown = redact("postgresql://u@h:1/db?password=QSecret1&sslpassword=SSLsecret9")
    assert shown == "postgresql://u@h:1/db?password=***&sslpassword=***"
    assert redact("host=h sslpassword=SSLsecret9 nopassword=kept") == (
        "host=h sslpassword=*** nopassword=kept"
    )
