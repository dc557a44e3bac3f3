"""Argument checks shared by every public entry point.

Each check returns the value it accepted (normalized where that is harmless) or raises
:class:`~mem01session.errors.ConfigError` naming the argument and what was wrong with it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, tzinfo

from .errors import ConfigError

MAX_ID_CHARS = 200


def is_utf8(text: str) -> bool:
    """Whether ``text`` can be stored: no lone surrogates (PostgreSQL takes UTF-8 only)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def check_id(name: str, value: object) -> str:
    """A key such as ``user_id`` or ``session_id``: a non-blank UTF-8 string without NUL
    bytes, at most :data:`MAX_ID_CHARS` characters."""
    if not isinstance(value, str):
        raise ConfigError(f"{name} must be a string, got {type(value).__name__}")
    if not value.strip():
        raise ConfigError(f"{name} must not be empty")
    if "\x00" in value:
        raise ConfigError(f"{name} contains a NUL byte")
    if not is_utf8(value):
        raise ConfigError(f"{name} is not valid UTF-8 (it holds a lone surrogate)")
    if len(value) > MAX_ID_CHARS:
        raise ConfigError(f"{name} is {len(value)} characters, over the limit of {MAX_ID_CHARS}")
    return value


def check_filter(name: str, value: object) -> str | None:
    """A text filter (``contains=``) a query can take: None when missing or blank, NUL
    bytes dropped; anything but a UTF-8 string is refused."""
    if value is None:
        return None
    if not isinstance(value, str) or not is_utf8(value):
        raise ConfigError(f"{name} must be a UTF-8 string")
    cleaned = value.replace("\x00", "")
    return cleaned if cleaned.strip() else None


MAX_INT = 2**63 - 1
"""The largest count or id a statement takes (PostgreSQL's ``bigint``)."""


def check_positive_int(name: str, value: object, *, minimum: int = 1) -> int:
    """An ``int`` (not a ``bool``) of at least ``minimum`` and at most :data:`MAX_INT`."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        expected = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"
        raise ConfigError(f"{name} must be {expected}, got {value!r:.40}")
    if value > MAX_INT:
        # (shown by its size: a float cannot hold every int, nor str one of 5,000 digits)
        raise ConfigError(f"{name} must be at most {MAX_INT}, got one of {value.bit_length()} bits")
    return value


def check_seconds(name: str, value: object, *, allow_none: bool = False) -> float | None:
    """A duration in seconds: a finite number >= 0 (or None when ``allow_none``)."""
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < 1e12:
        raise ConfigError(f"{name} must be a number of seconds >= 0, got {value!r}")
    return float(value)


def aware(moment: datetime) -> datetime:
    """``moment`` with a time zone; naive datetimes are taken as UTC."""
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def check_moment(name: str, value: object) -> datetime:
    """A ``datetime``, made time-zone aware (naive means UTC)."""
    if not isinstance(value, datetime):
        raise ConfigError(f"{name} must be a datetime, got {type(value).__name__}")
    return aware(value)


# Files of the zone database that stand for the machine's own zone, not a place.
_MACHINE_ZONES = frozenset({"localtime", "posixrules"})


def check_timezone(name: str, value: object) -> tzinfo:
    """An IANA time zone name (``"Europe/Lisbon"``, ``"UTC"``), as its zone."""
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    if not isinstance(value, str) or not value.strip():
        raise ConfigError(
            f"{name} must be an IANA time zone name such as 'Europe/Lisbon', got {value!r:.60}"
        )
    if value in _MACHINE_ZONES:
        raise ConfigError(
            f"{name} must be an IANA time zone name such as 'Europe/Lisbon', got {value!r}: "
            "that file names the zone of whichever machine reads it (a worker elsewhere "
            "would read another), not the user's"
        )
    try:
        return ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise ConfigError(
            f"{name} must be an IANA time zone name such as 'Europe/Lisbon', got {value!r:.60} "
            "(no such zone)"
        ) from None


def known_timezone(value: object) -> str | None:
    """``value`` if it names a zone this machine knows (one recorded where the time zone
    database is newer may not), else None: a read then dates in UTC rather than failing."""
    try:
        check_timezone("timezone", value)
    except ConfigError:
        return None
    assert isinstance(value, str)
    return value


SESSION_METHODS = ("get_items", "add_items", "pop_item", "clear_session")


def check_session(name: str, value: object) -> None:
    """An SDK ``Session``: an object with the protocol's four methods. (Its ``session_id``
    is not read: some sessions, such as OpenAI's conversations, only know it later.)"""
    check_methods(name, value, "an SDK Session", SESSION_METHODS)


def check_items(value: object) -> None:
    """The ``items`` of a session's ``add_items``: a list of transcript items (dicts, as the
    SDK makes them). A string, a lone item or anything else would be stored piece by piece
    and break every later run of the conversation."""
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Sequence):
        raise ConfigError(f"items must be a list of items (dicts), got {type(value).__name__}")
    for index, item in enumerate(value):
        if not isinstance(item, Mapping):
            raise ConfigError(f"items[{index}] must be an item (a dict), got {type(item).__name__}")
        if "role" not in item and "type" not in item:  # every SDK item says one or the other
            raise ConfigError(f"items[{index}] is no transcript item: it has no role and no type")
        try:  # what a store keeps and a model API reads: strict JSON (no NaN)
            json.dumps(item, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"items[{index}] is not JSON: {str(exc)[:80]}") from None


def check_limit(value: object) -> int | None:
    """The ``limit`` of a session's ``get_items``: None (every item) or a count >= 0."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConfigError(f"limit must be None or an integer >= 0, got {value!r:.40}")
    return value


def check_methods(name: str, value: object, kind: str, methods: tuple[str, ...]) -> None:
    """``value`` (the argument ``name``) is ``kind``: it has each of ``methods``, callable."""
    missing = [m for m in methods if not callable(getattr(value, m, None))]
    if missing:
        raise ConfigError(
            f"{name} must be {kind} ({', '.join(methods)}), got "
            f"{type(value).__name__}, which has no {', '.join(missing)}"
        )


def check_flag(name: str, value: object, *, optional: bool = False) -> bool:
    """A flag: True or False (or None, when ``optional``); ``"no"`` is not taken as true."""
    if isinstance(value, bool) or (value is None and optional):
        return bool(value)
    raise ConfigError(f"{name} must be True or False, got {value!r}")


def check_model_options(
    model: object,
    timeout: object,
    max_tokens: object,
    max_retries: object,
    *,
    tokens_name: str = "max_tokens",
) -> None:
    """What a client of an OpenAI-compatible model is given: a model name (or None), a
    timeout of more than 0 seconds (or None), a positive limit named ``tokens_name`` (or
    None: a token limit, an embedding's dimension) and a number of retries >= 0."""
    if model is not None and (not isinstance(model, str) or not model.strip()):
        raise ConfigError(f"model must be a model name, got {model!r}")
    if timeout is not None and not check_seconds("timeout", timeout):
        raise ConfigError("timeout must be more than 0 seconds, got 0")
    if max_tokens is not None:
        check_positive_int(tokens_name, max_tokens)
    check_positive_int("max_retries", max_retries, minimum=0)


def check_instance(name: str, value: object, kind: type, *, optional: bool = True) -> None:
    """``value`` (the argument ``name``) is a ``kind`` (or None, when ``optional``)."""
    if (value is None and optional) or isinstance(value, kind):
        return
    raise ConfigError(f"{name} must be a {kind.__name__}, got {type(value).__name__}")
