"""Easy, stated dates in a clause ("last weekend", "in 2021", "3 months ago")."""

from __future__ import annotations

import re
from datetime import datetime, timedelta

__all__ = ["parse_when"]

_MONTH_NAMES = (
    "january february march april may june july august september october november december"
)
_MONTHS = {m: i for i, m in enumerate(_MONTH_NAMES.split(), start=1)}
_WEEKDAYS = {
    d: i for i, d in enumerate("monday tuesday wednesday thursday friday saturday sunday".split())
}
_NUMBERS = {
    w: i
    for i, w in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve".split()
    )
} | {"a": 1, "an": 1}

# Northern-hemisphere season starts, by month; "last spring" is the last one that ended.
_SEASON_STARTS = {"spring": 3, "summer": 6, "autumn": 9, "fall": 9, "winter": 12}

_WHEN = re.compile(
    r",?\s+(?:"
    r"(?P<rel>yesterday|today|this\s+morning|last\s+(?:weekend|week|month|year))"
    r"|last\s+(?P<season>spring|summer|autumn|fall|winter)"
    r"|(?P<n>\d+|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)\s+"
    r"(?P<unit>day|week|month|year)s?\s+ago"
    r"|(?:in|since|back\s+in)\s+(?P<month>January|February|March|April|May|June|July|August"
    r"|September|October|November|December)(?:\s+(?P<myear>(?:19|20)\d\d))?"
    r"|(?:in|since|back\s+in)\s+(?P<year>(?:19|20)\d\d)"
    r"|(?:on|last)\s+(?P<weekday>Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)"
    r")\b",
    re.IGNORECASE,
)


def _midnight(moment: datetime) -> datetime:
    return moment.replace(hour=0, minute=0, second=0, microsecond=0)


def _months_back(moment: datetime, months: int) -> datetime:
    index = moment.year * 12 + moment.month - 1 - months
    return _midnight(moment).replace(year=index // 12, month=index % 12 + 1, day=1)


def _months_forward(moment: datetime, months: int) -> datetime:
    total = moment.year * 12 + moment.month - 1 + months
    return moment.replace(year=total // 12, month=total % 12 + 1)


def parse_when(clause: str, observed_at: datetime) -> tuple[str, datetime | None]:
    """The clause without its date phrase, and the date it names (midnight, observed tz).

    A date after ``observed_at`` is ignored (a plan, not a fact).
    """
    m = _WHEN.search(clause)
    if m is None:
        return clause, None
    day = _midnight(observed_at)
    when: datetime | None = None
    if m["rel"]:
        rel = " ".join(m["rel"].lower().split())
        if rel == "yesterday":
            when = day - timedelta(days=1)
        elif rel in ("today", "this morning"):
            when = day
        elif rel == "last weekend":
            # Its Saturday; said on a weekend, the one before (not this one's Saturday).
            back = (day.weekday() - 5) % 7 + (7 if day.weekday() >= 5 else 0)
            when = day - timedelta(days=back)
        elif rel == "last week":
            when = day - timedelta(days=7)
        elif rel == "last month":
            when = _months_back(observed_at, 1)
        else:
            when = day.replace(year=day.year - 1, month=1, day=1)
    elif m["season"]:
        start = _SEASON_STARTS[m["season"].lower()]
        when = day.replace(
            year=day.year if start <= day.month else day.year - 1, month=start, day=1
        )
        if _months_forward(when, 3) > day:  # that season is still going on: the one before
            when = when.replace(year=when.year - 1)
    elif m["unit"]:
        n = int(m["n"]) if m["n"].isdigit() else _NUMBERS[m["n"].lower()]
        unit = m["unit"].lower()
        if unit in ("day", "week"):
            when = day - timedelta(days=n * (7 if unit == "week" else 1))
        else:
            when = _months_back(observed_at, n * (12 if unit == "year" else 1))
    elif m["month"]:
        month = _MONTHS[m["month"].lower()]
        year = int(m["myear"]) if m["myear"] else day.year - (month > day.month)
        when = day.replace(year=year, month=month, day=1)
    elif m["year"]:
        when = day.replace(year=int(m["year"]), month=1, day=1)
    elif m["weekday"]:
        back = (day.weekday() - _WEEKDAYS[m["weekday"].lower()]) % 7 or 7
        when = day - timedelta(days=back)
    rest = (clause[: m.start()] + clause[m.end() :]).strip()
    return rest, when if when is not None and when <= observed_at else None
