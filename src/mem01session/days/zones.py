"""Where a time zone is, as the time zone database says (``zone.tab``, one country per
zone; else ``zone1970.tab``): the countries that use it and whether it lies south of the
equator. Read once per zone, from the system's database, else the ``tzdata`` package's;
a zone neither places (``UTC``, a link, a machine without the tables) has no place."""

from __future__ import annotations

import importlib.util
import zoneinfo
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import tzinfo
from functools import cache
from pathlib import Path

_TABLES = ("zone.tab", "zone1970.tab")


@dataclass(frozen=True)
class ZonePlace:
    countries: frozenset[str]  # ISO 3166 codes, upper case
    southern: bool


def place_of(zone: tzinfo) -> ZonePlace | None:
    """``zone``'s place, when it is an IANA zone the tables list."""
    key = getattr(zone, "key", None)
    return _place(key) if isinstance(key, str) and key else None


@cache
def _place(key: str) -> ZonePlace | None:
    for table in _tables():
        for line in table:
            fields = line.split("\t")
            if len(fields) >= 3 and fields[2] == key and not line.startswith("#"):
                return ZonePlace(frozenset(fields[0].split(",")), fields[1].startswith("-"))
    return None


def _tables() -> Iterator[list[str]]:
    """The lines of each table found, the system's first."""
    folders = [Path(folder) for folder in zoneinfo.TZPATH]
    spec = importlib.util.find_spec("tzdata")
    if spec is not None and spec.origin is not None:
        folders.append(Path(spec.origin).parent / "zoneinfo")
    for folder in folders:
        for name in _TABLES:
            try:
                yield (folder / name).read_text(encoding="utf-8").splitlines()
            except OSError:
                continue
