"""Where a time zone is, as the time zone database's ``zone1970.tab`` says: the countries
that use it and whether it lies south of the equator. Read once per zone; a zone the table
does not place (``UTC``, a link, a machine without the table) has no place."""

from __future__ import annotations

import zoneinfo
from dataclasses import dataclass
from datetime import tzinfo
from functools import cache
from pathlib import Path


@dataclass(frozen=True)
class ZonePlace:
    countries: frozenset[str]  # ISO 3166 codes, upper case
    southern: bool


def place_of(zone: tzinfo) -> ZonePlace | None:
    """``zone``'s place, when it is an IANA zone the table lists."""
    key = getattr(zone, "key", None)
    return _place(key) if isinstance(key, str) and key else None


@cache
def _place(key: str) -> ZonePlace | None:
    for folder in zoneinfo.TZPATH:
        try:
            text = (Path(folder) / "zone1970.tab").read_text(encoding="utf-8")
        except OSError:
            continue
        for line in text.splitlines():
            fields = line.split("\t")
            if len(fields) >= 3 and fields[2] == key and not line.startswith("#"):
                return ZonePlace(frozenset(fields[0].split(",")), fields[1].startswith("-"))
        return None
    return None
