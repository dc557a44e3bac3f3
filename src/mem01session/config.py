"""Settings read from the environment.

=========================  ==========================================================
variable                   meaning
=========================  ==========================================================
``MEM01_DATABASE_URL``     PostgreSQL URL (falls back to ``DATABASE_URL``); unset
                           means an embedded server under ``MEM01_HOME``
``MEM01_HOME``             data folder (transcripts, embedded PostgreSQL)
``OPENAI_API_KEY``         enables the OpenAI extractor (and OpenAI embedding models)
``OPENAI_BASE_URL``        any OpenAI-compatible server for the chat models
``MEM01_LLM_MODEL``        extraction model (default ``gpt-4.1-mini``)
``MEM01_EMBEDDING_MODEL``  embedding model (default ``all-MiniLM-L6-v2``, run locally)
``MEM01_EMBEDDING_BASE_URL`` the server of a non-OpenAI embedding model
``MEM01_EMBEDDING_DIM``    embedding dimension asked of a server (default: the model's)
``MEM01_EMBEDDING_MODEL_PATH`` another copy of the local model's ``model.onnx``
``MEM01_EMBEDDING_MODEL_VERIFY`` ``0`` skips the local model file's sha256 check
``MEM01_EMBEDDING_PROCESS`` ``0`` runs the local model in this process, not in a
                           process of its own (the default)
``MEM01_LLM_MAX_TOKENS``   most tokens an extraction answer may take (default 1024)
``MEM01_LLM_TIMEOUT``      seconds one extraction may take, the worker's bound and each
                           request's (default 60 for OpenAI, 300 for another server)
``MEM01_OPENAI_API``       ``responses`` or ``chat``: the API the demo's answering model
                           speaks (default: ``responses`` for OpenAI, ``chat`` when
                           ``OPENAI_BASE_URL`` names another server)
``MEM01_MEMORY_PLACEMENT`` where the memory block goes: ``auto`` (default), ``system``,
                           ``user`` or ``instructions``
``MEM01_EPISODES``         which messages are kept verbatim as episodes: ``user``
                           (default), ``all`` (assistant replies too) or ``off``
``MEM01_EPISODE_RETENTION_DAYS`` delete episodes said longer ago (default: keep them)
=========================  ==========================================================
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Literal, cast

import platformdirs

from .errors import ConfigError
from .secrets.redaction import dsn_secrets, redact_dsn, register_secret

DEFAULT_LLM_MODEL = "gpt-4.1-mini"
DEFAULT_OPENAI_EMBEDDING_MODEL = "text-embedding-3-small"
DEFAULT_LLM_MAX_TOKENS = 1024
DEFAULT_LLM_TIMEOUT = 60.0
"""Seconds one extraction (and one answering call of the demo) may take on OpenAI's API."""
DEFAULT_LOCAL_LLM_TIMEOUT = 300.0
"""The same on another server (``OPENAI_BASE_URL``): a CPU-only llama.cpp or Ollama can
take minutes to write an extraction's JSON."""
AUTO_LLM_TIMEOUT = 0.0
"""``Settings.llm_timeout`` left to the default for the server: 60 s on OpenAI, 300 s on
another server."""
OPENAI_APIS = ("responses", "chat")
MEMORY_PLACEMENTS = ("auto", "system", "user", "instructions")
EpisodeKeep = Literal["user", "all", "off"]
EPISODE_KEEPS: tuple[EpisodeKeep, ...] = ("user", "all", "off")
_ROOT_HOME = Path("/var/lib/mem01session")


def _path(name: str, value: object) -> Path:
    """A path field given as ``str`` or ``Path`` (``~`` expanded), or a ConfigError."""
    if isinstance(value, str | os.PathLike) and str(value):
        try:
            return Path(value).expanduser()
        except (TypeError, RuntimeError):  # bytes, or "~user" of no such user
            pass
    raise ConfigError(f"Settings.{name} must be a path (str or Path), got {value!r}")


def default_home() -> Path:
    """The data folder used when ``MEM01_HOME`` is unset.

    As root the embedded PostgreSQL must run as an unprivileged OS user that can traverse
    every parent of its data folder; a folder made for it under ``/var/lib`` avoids
    opening up ``/root``.
    """
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        return _ROOT_HOME
    return Path(platformdirs.user_data_dir("mem01session", appauthor=False))


_TEXTS = ("llm_model", "memory_placement", "episodes", "database_url_variable")
_OPTIONAL_TEXTS = (
    "database_url",
    "openai_api_key",
    "openai_base_url",
    "embedding_model",
    "embedding_base_url",
    "openai_api",
)
_OPTIONAL_INTS = ("embedding_dim", "episode_retention_days")
_FLAGS = ("embedding_model_verify", "embedding_process")


def _check_kinds(settings: Settings) -> None:
    """Each field given directly is of its kind: ``ConfigError`` naming the field and the
    type it got (never the value: a key or a URL with its password may be one)."""

    def wrong(name: str, kind: str) -> ConfigError:
        got = type(getattr(settings, name)).__name__
        return ConfigError(f"Settings.{name} must be {kind}, got {got}")

    for name in (*_TEXTS, *_OPTIONAL_TEXTS):
        value = getattr(settings, name)
        if not (isinstance(value, str) or (value is None and name in _OPTIONAL_TEXTS)):
            raise wrong(name, "a str" if name in _TEXTS else "a str or None")
    for name in (*_OPTIONAL_INTS, "llm_max_tokens"):
        value = getattr(settings, name)
        if not (
            (isinstance(value, int) and not isinstance(value, bool))
            or (value is None and name in _OPTIONAL_INTS)
        ):
            raise wrong(name, "an int" if name == "llm_max_tokens" else "an int or None")
    timeout = settings.llm_timeout
    if not isinstance(timeout, int | float) or isinstance(timeout, bool):
        raise wrong("llm_timeout", "a number of seconds")
    for name in _FLAGS:
        if not isinstance(getattr(settings, name), bool):
            raise wrong(name, "True or False")


@dataclass(frozen=True)
class Settings:
    """Every knob of the library, read once from the environment by :meth:`from_env`
    (``Settings(...)`` made by hand reads none of it: ``Settings.from_env(episodes="off")``
    changes one knob and keeps the environment's others).

    ``repr()`` and ``str()`` never show the database password or the API key.
    """

    database_url: str | None = field(default=None, repr=False)
    home: Path = field(default_factory=default_home)
    openai_api_key: str | None = field(default=None, repr=False)
    openai_base_url: str | None = None
    llm_model: str = DEFAULT_LLM_MODEL
    embedding_model: str | None = None
    embedding_dim: int | None = None
    embedding_base_url: str | None = None
    embedding_model_path: Path | None = None
    embedding_model_verify: bool = True
    embedding_process: bool = True
    """Run the local embedding model in a process of its own (``MEM01_EMBEDDING_PROCESS``)."""
    llm_max_tokens: int = DEFAULT_LLM_MAX_TOKENS
    llm_timeout: float = AUTO_LLM_TIMEOUT
    """Seconds one extraction may take (the worker's bound and each request's timeout);
    :data:`AUTO_LLM_TIMEOUT` (the default) becomes 60 on OpenAI, 300 on another server."""
    openai_api: str | None = None
    memory_placement: str = "auto"
    episodes: EpisodeKeep = "user"
    episode_retention_days: int | None = None
    database_url_variable: str = field(default="MEM01_DATABASE_URL", repr=False, compare=False)
    """The variable ``database_url`` was read from (what errors about it name)."""

    def __post_init__(self) -> None:
        _check_kinds(self)  # before anything reads them (a key that is not a str included)
        register_secret(self.openai_api_key)
        for url, variable in (
            (self.openai_base_url, "OPENAI_BASE_URL"),
            (self.embedding_base_url, "MEM01_EMBEDDING_BASE_URL"),
        ):
            if url:  # a proxy's password in it is a secret too
                _register_dsn_password(url)
                _check_api_url(url, variable)
        object.__setattr__(self, "home", _path("home", self.home))
        if self.embedding_model_path is not None:
            path = _path("embedding_model_path", self.embedding_model_path)
            if not path.is_file():  # else every run and every job failed on it, later
                raise ConfigError(f"MEM01_EMBEDDING_MODEL_PATH names no file: {str(path)!r:.200}")
            object.__setattr__(self, "embedding_model_path", path)
        if self.llm_timeout == AUTO_LLM_TIMEOUT:
            default = (
                DEFAULT_LLM_TIMEOUT
                if _is_openai(self.openai_base_url)
                else DEFAULT_LOCAL_LLM_TIMEOUT
            )
            object.__setattr__(self, "llm_timeout", default)
        if self.database_url:
            _register_dsn_password(self.database_url)
            if not self.database_url.startswith(("postgresql", "postgres")):
                raise ConfigError(
                    "MEM01_DATABASE_URL must be a PostgreSQL URL such as "
                    f"postgresql://user:password@host:5432/dbname; {_shape(self.database_url)}"
                )
            check_database_url(self.database_url, self.database_url_variable)
            object.__setattr__(self, "database_url", libpq_url(self.database_url))
        if self.embedding_dim is not None and not 1 <= self.embedding_dim <= 16000:
            raise ConfigError(
                f"MEM01_EMBEDDING_DIM must be between 1 and 16000, got {self.embedding_dim}"
            )
        if not 1 <= self.llm_max_tokens <= 1_000_000:
            raise ConfigError(
                f"MEM01_LLM_MAX_TOKENS must be between 1 and 1000000, got {self.llm_max_tokens}"
            )
        if not 0 < self.llm_timeout <= 3600:
            raise ConfigError(
                f"MEM01_LLM_TIMEOUT must be more than 0 and at most 3600 seconds, "
                f"got {self.llm_timeout:g}"
            )
        if self.openai_api is not None and self.openai_api not in OPENAI_APIS:
            raise ConfigError(
                f"MEM01_OPENAI_API must be 'responses' or 'chat', got {self.openai_api!r}"
            )
        if self.memory_placement not in MEMORY_PLACEMENTS:
            raise ConfigError(
                "MEM01_MEMORY_PLACEMENT must be one of "
                f"{', '.join(MEMORY_PLACEMENTS)}, got {self.memory_placement!r}"
            )
        if self.episodes not in EPISODE_KEEPS:
            raise ConfigError(
                f"MEM01_EPISODES must be 'user', 'all' or 'off', got {self.episodes!r:.40}"
            )
        check_retention_days(self.episode_retention_days, "MEM01_EPISODE_RETENTION_DAYS")

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
        """Read settings from ``environ`` (default: ``os.environ``), then set ``overrides``
        (``Settings.from_env(episodes="off")``: the environment for everything else; a plain
        ``Settings(...)`` reads none of it)."""
        unknown = sorted(set(overrides) - {f.name for f in fields(cls)})
        if unknown:
            raise ConfigError(f"Settings has no field {', '.join(map(repr, unknown))}")
        env = os.environ if environ is None else environ
        if "MEM01_DATABASE_URL" in env and not env["MEM01_DATABASE_URL"].strip():
            # An unset variable a deploy script expanded: the embedded server would be used
            # instead of the database meant, without a word.
            raise ConfigError(
                "MEM01_DATABASE_URL is set but empty: give the PostgreSQL URL, or unset it "
                "to use the embedded server under MEM01_HOME"
            )

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
        model_path = get("MEM01_EMBEDDING_MODEL_PATH")
        verify = (get("MEM01_EMBEDDING_MODEL_VERIFY") or "1").lower()
        if verify not in ("0", "1", "true", "false", "yes", "no"):
            raise ConfigError(f"MEM01_EMBEDDING_MODEL_VERIFY must be 1 or 0, got {verify!r}")
        process = (get("MEM01_EMBEDDING_PROCESS") or "1").lower()
        if process not in ("0", "1", "true", "false", "yes", "no"):
            raise ConfigError(f"MEM01_EMBEDDING_PROCESS must be 1 or 0, got {process!r}")
        max_tokens = _number(get, "MEM01_LLM_MAX_TOKENS", int, DEFAULT_LLM_MAX_TOKENS)
        timeout = _number(get, "MEM01_LLM_TIMEOUT", float, AUTO_LLM_TIMEOUT)
        if get("MEM01_LLM_TIMEOUT") is not None and not 0 < timeout <= 3600:
            raise ConfigError(
                f"MEM01_LLM_TIMEOUT must be more than 0 and at most 3600 seconds, got {timeout:g}"
            )
        retention = get("MEM01_EPISODE_RETENTION_DAYS")
        read = cls(
            database_url=get("MEM01_DATABASE_URL") or get("DATABASE_URL"),
            database_url_variable=(
                "MEM01_DATABASE_URL" if get("MEM01_DATABASE_URL") else "DATABASE_URL"
            ),
            home=Path(home).expanduser() if home else default_home(),
            openai_api_key=get("OPENAI_API_KEY"),
            openai_base_url=get("OPENAI_BASE_URL"),
            llm_model=get("MEM01_LLM_MODEL") or DEFAULT_LLM_MODEL,
            embedding_model=get("MEM01_EMBEDDING_MODEL"),
            embedding_dim=dim,
            embedding_base_url=get("MEM01_EMBEDDING_BASE_URL"),
            embedding_model_path=Path(model_path).expanduser() if model_path else None,
            embedding_model_verify=verify in ("1", "true", "yes"),
            embedding_process=process in ("1", "true", "yes"),
            llm_max_tokens=max_tokens,
            llm_timeout=timeout,
            openai_api=(get("MEM01_OPENAI_API") or "").lower() or None,
            memory_placement=(get("MEM01_MEMORY_PLACEMENT") or "auto").lower(),
            episodes=cast(EpisodeKeep, (get("MEM01_EPISODES") or "user").lower()),
            episode_retention_days=(
                None if retention is None else _number(get, "MEM01_EPISODE_RETENTION_DAYS", int, 0)
            ),
        )
        return replace(read, **overrides) if overrides else read

    @property
    def model_api(self) -> str:
        """The API the answering model speaks, ``responses`` or ``chat``:
        ``MEM01_OPENAI_API``, else ``responses`` for OpenAI's own API and ``chat`` for any
        other server at ``OPENAI_BASE_URL`` (vLLM, Ollama, llama.cpp and LM Studio all
        speak Chat Completions; not all serve ``/v1/responses``)."""
        if self.openai_api is not None:
            return self.openai_api
        return "responses" if _is_openai(self.openai_base_url) else "chat"

    @property
    def safe_database_url(self) -> str | None:
        """The database URL with its password masked, for display."""
        return redact_dsn(self.database_url) if self.database_url else None

    def __repr__(self) -> str:
        return (
            f"Settings(database_url={self.safe_database_url!r}, home={str(self.home)!r}, "
            f"openai_api_key={'***' if self.openai_api_key else None!r}, "
            f"openai_base_url={_shown(self.openai_base_url)!r}, llm_model={self.llm_model!r}, "
            f"embedding_model={self.embedding_model!r}, embedding_dim={self.embedding_dim!r}, "
            f"embedding_base_url={_shown(self.embedding_base_url)!r}, "
            f"episodes={self.episodes!r}, "
            f"episode_retention_days={self.episode_retention_days!r})"
        )

    __str__ = __repr__


def _number(
    get: Callable[[str], str | None], name: str, kind: type[int] | type[float], default: float
) -> Any:
    """The setting ``name`` as a ``kind`` (``default`` when unset); ConfigError names it."""
    text = get(name)
    if text is None:
        return kind(default)
    try:
        value = kind(text)
    except ValueError:
        raise ConfigError(f"{name} must be {_KIND[kind]}, got {text!r}") from None
    if value != value:  # NaN
        raise ConfigError(f"{name} must be {_KIND[kind]}, got {text!r}")
    return value


def _check_api_url(url: str, variable: str) -> None:
    """Refuse a model server's URL no request could reach (the error came at the first
    extraction, as a connection error naming no setting)."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError:
        host = None
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not host:
        raise ConfigError(
            f"{variable} must be an http(s) URL such as http://127.0.0.1:8080/v1; {_shape(url)}"
        )


def _shown(url: str | None) -> str | None:
    """``url`` with any password in it masked, for display."""
    return redact_dsn(url) if url else None


_KIND: dict[type, str] = {int: "an integer", float: "a number of seconds"}


def _is_openai(base_url: str | None) -> bool:
    """Whether ``base_url`` is OpenAI's own API (None: the client's default, which is)."""
    if base_url is None:
        return True
    from urllib.parse import urlsplit

    try:
        host = (urlsplit(base_url).hostname or "").lower()
    except ValueError:
        return False
    return host == "api.openai.com" or host.endswith((".openai.com", ".openai.azure.com"))


MAX_RETENTION_DAYS = 36_500
"""The longest episode retention (a hundred years): a longer one reaches back before any
date a database or Python holds. Unset keeps episodes until the user is erased."""


def check_retention_days(days: object, name: str) -> None:
    """Refuse an episode retention that is not a whole number of days from 1 to
    :data:`MAX_RETENTION_DAYS` (``name``: what the error calls it)."""
    if days is None:
        return
    if isinstance(days, bool) or not isinstance(days, int) or not 1 <= days <= MAX_RETENTION_DAYS:
        raise ConfigError(
            f"{name} must be a whole number of days from 1 to {MAX_RETENTION_DAYS} "
            f"(unset: kept until the user is erased), got {days!r:.40}"
        )


DATABASE_SCHEME = re.compile(r"^(postgres|postgresql)(\+[a-z0-9_]+)?://", re.IGNORECASE)
"""A PostgreSQL URL's scheme, with the driver SQLAlchemy's form names, if any."""


def libpq_url(url: str) -> str:
    """``postgresql+psycopg://...`` (SQLAlchemy's form) -> ``postgresql://...`` (libpq's,
    which takes no driver in the scheme)."""
    return DATABASE_SCHEME.sub("postgresql://", url, count=1)


def check_database_url(url: str, variable: str = "MEM01_DATABASE_URL") -> None:
    """Refuse a URL that a driver would misread (and then describe with parts of it): its
    messages never quote the URL, so no part of a password can show.

    A ``#``, ``?`` or ``/`` inside the user name or password must be percent-encoded; so must
    an ``@`` (libpq reads the last one as the start of the host); a port is 1 to 65535.
    """
    from urllib.parse import urlsplit

    encode = "write it as %23, ?, / and @ as %3F, %2F and %40 inside the user name or password"
    try:
        parts = urlsplit(url)
    except ValueError:  # e.g. an unclosed IPv6 bracket
        raise ConfigError(f"{variable} is not a valid URL (a bracket is not closed)") from None
    if "#" in url:
        raise ConfigError(f"{variable} holds a '#', which ends a URL; {encode}")
    if "@" in f"{parts.path}?{parts.query}":
        raise ConfigError(f"{variable} has an '@' after the host name; {encode}")
    if parts.netloc.count("@") > 1:
        raise ConfigError(f"{variable} has more than one '@' before the host name; {encode}")
    host = parts.netloc.rpartition("@")[2]
    tail = host.rpartition("]")[2] if host.startswith("[") else host
    if ":" in tail:
        port = tail.partition(":")[2]
        if not (port.isascii() and port.isdigit() and 0 < int(port) < 65536):
            # (every way a password could reach this part was refused above)
            raise ConfigError(f"{variable} has an invalid port {port!r:.24}: expected 1 to 65535")


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
