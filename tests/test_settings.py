"""Settings take paths as ``str`` or ``Path``, and name a field given anything else."""

from __future__ import annotations

from pathlib import Path

import pytest

from mem01session import Settings
from mem01session.errors import ConfigError


def test_a_home_or_model_path_given_as_text_is_a_path_with_home_expanded() -> None:
    settings = Settings(home="~/mem01", embedding_model_path="/models/model.onnx")  # type: ignore[arg-type]
    assert settings.home == Path.home() / "mem01"
    assert settings.embedding_model_path == Path("/models/model.onnx")
    assert Settings(home=Path("/srv/mem01")).home == Path("/srv/mem01")


@pytest.mark.parametrize(
    ("field", "value"),
    [("home", ""), ("home", 42), ("home", b"/srv"), ("embedding_model_path", 3.5)],
)
def test_anything_else_is_refused_by_name(field: str, value: object) -> None:
    with pytest.raises(ConfigError, match=f"Settings.{field} must be a path"):
        Settings(**{field: value})  # type: ignore[arg-type]
