"""Settings read from the environment.

=========================  ==========================================================
variable                   meaning
=========================  ==========================================================
``MEM01_DATABASE_URL``     PostgreSQL URL (falls back to ``DATABASE_URL``); unset
                           means an embedded server under ``MEM01_HOME``
``MEM01_HOME``             data folder (transcripts, embedded PostgreSQL)
``OPENAI_API_KEY``         enables the OpenAI embedder and extractor
``OPENAI_BASE_URL``        any OpenAI-compatible server
``MEM01_LLM_MODEL``        extraction model (default ``gpt-4.1-mini``)
``MEM01_EMBEDDING_MODEL``  embedding model (default ``text-embedding-3-small``)
``MEM01_EMBEDDING_DIM``    embedding dimension (default: the embedder's own)
=========================  ==========================================================
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import platformdirs

from .errors import ConfigError
from .redaction import dsn_secrets, redact_dsn, register_secret

DEFAULT_LLM_MODEL = "gpt-4.1-mini"
DEFAULT_OPENAI_EMBEDDING_MODEL = "text-embedding-3-small"
_ROOT_HOME = Path("/var/lib/mem01session")


def default_home() -> Path:
    """The data folder used when ``MEM01_HOME`` is unset.

    As root the embedded PostgreSQL must run as an unprivileged OS user that can traverse
    every parent of its data folder; a folder made for it under ``/var/lib`` avoids
    opening up ``/root``.
    """
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        return _ROOT_HOME
    return Path(platformdirs.user_data_dir("mem01session", appauthor=False))


@dataclass(frozen=True)
class Settings:
    """Every knob of the library, read once from the environment by :meth:`from_env`.

    ``repr()`` and ``str()`` never show the database password or the API key.
    """

    database_url: str | None = field(default=None, repr=False)
    home: Path = field(default_factory=default_home)
    openai_api_key: str | None = field(default=None, repr=False)
    openai_base_url: str | None = None
    llm_model: str = DEFAULT_LLM_MODEL
    embedding_model: str | None = None
    embedding_dim: int | None = None

    def __post_init__(self) -> None:
        register_secret(self.openai_api_key)
        if self.database_url:
            _register_dsn_password(self.database_url)
            if not self.database_url.startswith(("postgresql", "postgres")):
                raise ConfigError(
                    "MEM01_DATABASE_URL must be a PostgreSQL URL such as "
                    f"postgresql://user:password@host:5432/dbname; {_shape(self.database_url)}"
                )
        if self.embedding_dim is not None and not 1 <= self.embedding_dim <= 16000:
            raise ConfigError(
                f"MEM01_EMBEDDING_DIM must be between 1 and 16000, got {self.embedding_dim}"
            )

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """Read settings from ``environ`` (default: ``os.environ``)."""
        env = os.environ if environ is None else environ

        def get(name: str) -> str | None:
            value = env.get(name, "").strip()
            return value or None

        dim_text = get("MEM01_EMBEDDING_DIM")
        dim: int | None = None
        if dim_text is not None:
            try:
                dim = int(dim_text)
            except ValueError:
                raise ConfigError(
                    f"MEM01_EMBEDDING_DIM must be an integer, got {dim_text!r}"
                ) from None
        home = get("MEM01_HOME")
        return cls(
            database_url=get("MEM01_DATABASE_URL") or get("DATABASE_URL"),
            home=Path(home).expanduser() if home else default_home(),
            openai_api_key=get("OPENAI_API_KEY"),
            openai_base_url=get("OPENAI_BASE_URL"),
            llm_model=get("MEM01_LLM_MODEL") or DEFAULT_LLM_MODEL,
            embedding_model=get("MEM01_EMBEDDING_MODEL"),
            embedding_dim=dim,
        )

    @property
    def safe_database_url(self) -> str | None:
        """The database URL with its password masked, for display."""
        return redact_dsn(self.database_url) if self.database_url else None

    def __repr__(self) -> str:
        return (
            f"Settings(database_url={self.safe_database_url!r}, home={str(self.home)!r}, "
            f"openai_api_key={'***' if self.openai_api_key else None!r}, "
            f"openai_base_url={self.openai_base_url!r}, llm_model={self.llm_model!r}, "
            f"embedding_model={self.embedding_model!r}, embedding_dim={self.embedding_dim!r})"
        )

    __str__ = __repr__


def _register_dsn_password(dsn: str) -> None:
    """Register every reading of ``dsn``'s password (see :func:`dsn_secrets`)."""
    for secret in dsn_secrets(dsn):
        register_secret(secret)


def _shape(value: str) -> str:
    """What ``value`` looks like, without any of its text beyond a URL scheme: the value
    may be a password pasted into the wrong variable."""
    scheme = re.match(r"([A-Za-z][A-Za-z0-9+.\-]{0,30})://", value)
    if scheme:
        return f"got a {scheme.group(1)}:// URL"
    return f"got a value of {len(value)} characters that is not a URL"
