"""Settings take paths as ``str`` or ``Path``, each other field as its kind, and name a field
given anything else."""

from __future__ import annotations

from pathlib import Path

import pytest

from mem01session import Settings
from mem01session.errors import ConfigError


def test_a_home_or_model_path_given_as_text_is_a_path_with_home_expanded(tmp_path: Path) -> None:
    model = tmp_path / "model.onnx"
    model.write_bytes(b"onnx")
    settings = Settings(home="~/mem01", embedding_model_path=str(model))  # type: ignore[arg-type]
    assert settings.home == Path.home() / "mem01"
    assert settings.embedding_model_path == model


def test_a_model_path_that_names_no_file_is_refused_when_read(tmp_path: Path) -> None:
    # Accepted, it failed every run and every job later ("cannot read the embedding model")
    for missing in (tmp_path / "nope.onnx", tmp_path):
        with pytest.raises(ConfigError, match="MEM01_EMBEDDING_MODEL_PATH names no file"):
            Settings.from_env({"MEM01_EMBEDDING_MODEL_PATH": str(missing)})
    assert Settings(home=Path("/srv/mem01")).home == Path("/srv/mem01")


@pytest.mark.parametrize(
    ("field", "value"),
    [("home", ""), ("home", 42), ("home", b"/srv"), ("embedding_model_path", 3.5)],
)
def test_anything_else_is_refused_by_name(field: str, value: object) -> None:
    with pytest.raises(ConfigError, match=f"Settings.{field} must be a path"):
        Settings(**{field: value})  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("field", "value", "kind"),
    [
        ("database_url", 5432, "a str or None"),
        ("openai_api_key", 12345, "a str or None"),
        ("embedding_dim", "384", "an int or None"),
        ("episode_retention_days", 30.0, "an int or None"),
        ("llm_max_tokens", True, "an int"),
        ("llm_timeout", "60", "a number of seconds"),
        ("embedding_process", "no", "True or False"),  # was taken as true
        ("embedding_model_verify", 0, "True or False"),
        ("memory_placement", None, "a str"),
    ],
)
def test_a_field_of_the_wrong_kind_is_refused_by_name_without_its_value(
    field: str, value: object, kind: str
) -> None:
    """Given directly (from_env parses its text): each failed later with an AttributeError or
    TypeError, or, for a flag, was taken as true. The message names the type, never the value
    (it may be a key)."""
    with pytest.raises(ConfigError) as info:
        Settings(**{field: value})  # type: ignore[arg-type]
    assert str(info.value) == f"Settings.{field} must be {kind}, got {type(value).__name__}"


@pytest.mark.parametrize("days", ["0", "-1", "36501", "1000000", "99999999999"])
def test_an_episode_retention_no_date_can_reach_is_refused_when_read(days: str) -> None:
    # A million days was taken, then failed every recall and extraction (date out of range).
    with pytest.raises(ConfigError, match="MEM01_EPISODE_RETENTION_DAYS must be a whole number"):
        Settings.from_env({"MEM01_EPISODE_RETENTION_DAYS": days})


def test_a_century_of_episode_retention_is_the_longest() -> None:
    settings = Settings.from_env({"MEM01_EPISODE_RETENTION_DAYS": "36500"})
    assert settings.episode_retention_days == 36_500


def test_a_password_in_a_model_servers_url_is_masked_in_the_repr_and_the_logs() -> None:
    from mem01session.secrets.redaction import redact

    settings = Settings(
        openai_base_url="http://proxy:Pr0xyPass-llm@127.0.0.1:8000/v1",
        embedding_base_url="http://proxy:Pr0xyPass-emb@127.0.0.1:8001/v1",
    )
    shown = repr(settings)
    assert "Pr0xyPass" not in shown
    assert "openai_base_url='http://proxy:***@127.0.0.1:8000/v1'" in shown
    # registered: an error quoting it alone (no URL around it) is masked too
    assert "Pr0xyPass" not in redact("refused: Pr0xyPass-llm / Pr0xyPass-emb")


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("OPENAI_BASE_URL", "not a url"),
        ("OPENAI_BASE_URL", "ftp://example/v1"),
        ("OPENAI_BASE_URL", "http:///v1"),
        ("MEM01_EMBEDDING_BASE_URL", "localhost:8080/v1"),
    ],
)
def test_a_model_server_url_no_request_could_reach_is_refused_when_read(
    variable: str, value: str
) -> None:
    # It was taken, then every extraction failed with "Connection error." naming nothing.
    with pytest.raises(ConfigError, match=f"{variable} must be an http"):
        Settings.from_env({variable: value, "OPENAI_API_KEY": "sk-test-1234567890"})


def test_from_env_with_overrides_keeps_the_environments_other_settings(tmp_path: Path) -> None:
    env = {"MEM01_HOME": str(tmp_path), "MEM01_DATABASE_URL": "postgresql://h/db"}
    settings = Settings.from_env(env, episodes="off")
    assert (settings.episodes, settings.home, settings.database_url) == (
        "off",
        tmp_path,
        "postgresql://h/db",
    )
    with pytest.raises(ConfigError, match="must be 'user', 'all' or 'off'"):
        Settings.from_env(env, episodes="sometimes")
    with pytest.raises(ConfigError, match="Settings has no field 'episode'"):
        Settings.from_env(env, episode="off")


@pytest.mark.parametrize("blank", ["", "   "])
def test_a_database_url_set_but_empty_is_refused(blank: str) -> None:
    """It used the embedded server instead of the database meant, without a word."""
    with pytest.raises(ConfigError, match="MEM01_DATABASE_URL is set but empty"):
        Settings.from_env({"MEM01_DATABASE_URL": blank})
    assert Settings.from_env({}).database_url is None
