"""The days seasons and holidays name: "over the summer", "last winter", "at Christmas".

Seasons are the meteorological ones (three whole months: spring from March, summer from
June, autumn or fall from September, winter from December), turned half a year in a zone
of the southern hemisphere (:mod:`.zone_places`; a zone it does not place counts as
northern). A season named with a year is the one that starts in that year ("winter
2023": December 2023 to February 2024).

Holidays are the days people mean by them: Christmas from its eve to the day after,
Christmas Eve and Christmas Day alone, New Year's from its eve to its day, Halloween,
Valentine's Day, Easter from Good Friday to Easter Monday, and Thanksgiving (the United
States': the fourth Thursday of November) to its Sunday. "The day after" one counts from
its main day (Christmas Day, New Year's Day, Easter Sunday, Thanksgiving's Thursday).

Without a year: ``this`` is the one going on, else this year's; ``last`` the latest one
over by today; any other word the latest one begun by today. Pure functions, no I/O but a
zone's place, read once.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import date, timedelta, tzinfo

from .zones import place_of

Days = tuple[date, date]  # [first, after)

_SEASON_MONTHS = {"spring": 3, "summer": 6, "autumn": 9, "fall": 9, "winter": 12}


def season(name: str, zone: tzinfo) -> Callable[[int], Days]:
    """The season ``name`` of each year, in ``zone``'s hemisphere."""
    month = _SEASON_MONTHS[name.lower()]
    place = place_of(zone)
    if place is not None and place.southern:
        month = (month + 5) % 12 + 1

    def of(year: int) -> Days:
        after = month + 3
        return date(year, month, 1), date(year + (after > 12), (after - 1) % 12 + 1, 1)

    return of


def holiday(name: str) -> Callable[[int], Days]:
    """The holiday ``name`` (any case, with or without its apostrophe) of each year."""
    return _HOLIDAYS[_key(name)]


def _key(name: str) -> str:
    return " ".join(name.lower().replace("’", "'").replace("'", "").split())


def main_day(name: str, days: Days) -> Days:
    """The day a holiday's ``days`` count from when something is "the day after" it:
    Christmas Day, New Year's Day, Easter Sunday, Thanksgiving's Thursday."""
    key = _key(name)
    first, after = days
    if key in ("christmas", "xmas"):
        first += timedelta(days=1)
    elif key == "new years":
        first = after - timedelta(days=1)
    elif key == "easter":
        first += timedelta(days=2)
    return first, first + timedelta(days=1)


def occurrence(
    of: Callable[[int], Days], word: str | None, year: int | None, today: date
) -> Days | None:
    """Which season or holiday the words mean (see the module), or None (none yet)."""
    if year is not None:
        return of(year)
    word = (word or "").lower()
    recent = [of(y) for y in range(today.year, today.year - 3, -1)]  # newest first
    if word == "this":
        going = next((d for d in recent if d[0] <= today < d[1]), None)
        return going or of(today.year)
    if word == "last":
        return next((d for d in recent if d[1] <= today), None)
    begun = next((d for d in recent if d[0] <= today), None)
    if begun is not None and word == "since":
        return begun[0], today + timedelta(days=1)
    return begun


def _day(month: int, day: int, days: int = 1) -> Callable[[int], Days]:
    def of(year: int) -> Days:
        first = date(year, month, day)
        return first, first + timedelta(days=days)

    return of


def _easter(year: int) -> Days:
    """Good Friday to Easter Monday (Easter Sunday by the Gregorian computus)."""
    a, b, c = year % 19, year // 100, year % 100
    d, e = b // 4, b % 4
    g = (b - (b + 8) // 25 + 1) // 3
    h = (19 * a + b - d - g + 15) % 30
    i, k = c // 4, c % 4
    leap = (32 + 2 * e + 2 * i - h - k) % 7
    m = (a + 11 * h + 22 * leap) // 451
    month, day = divmod(h + leap - 7 * m + 114, 31)
    sunday = date(year, month, day + 1)
    return sunday - timedelta(days=2), sunday + timedelta(days=2)


def _thanksgiving(year: int) -> Days:
    """The fourth Thursday of November to the Sunday after it."""
    first = date(year, 11, 1)
    thursday = first + timedelta(days=(3 - first.weekday()) % 7 + 21)
    return thursday, thursday + timedelta(days=4)


_HOLIDAYS: dict[str, Callable[[int], Days]] = {
    "christmas": _day(12, 24, 3),
    "xmas": _day(12, 24, 3),
    "christmas eve": _day(12, 24),
    "christmas day": _day(12, 25),
    "new years": _day(12, 31, 2),
    "new years eve": _day(12, 31),
    "new years day": _day(1, 1),
    "halloween": _day(10, 31),
    "valentines day": _day(2, 14),
    "easter": _easter,
    "thanksgiving": _thanksgiving,
}
