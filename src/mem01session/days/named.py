"""The days a question names: "on October 13, 2023", "in June", "last week", "yesterday".

A user asking "What did I say on Monday?", "What happened in June?" or "What did we do
over the summer?" means what was said then; the read path then also fetches the episodes
said in those days and ranks them higher (:mod:`.episode_candidates`). What the user
tells of themselves names no days here ("I fly to Paris in June" asks for nothing said
last June); a question, a request or a search does. Pure functions, no I/O.

English only. Dates are read in the user's zone and relative to the recall's moment (its
``as_of``, else now). A month or day without a year is the latest one not after today; a
month named alone needs a word before it ("in May", not "may"); "early", "mid" and "late"
name a third of it ("early June": 1-10 June). Numeric dates need a word before them ("on
10/13") or a year ("13.10.2023"); ``3/4`` is March or April depending on who writes it:
month first in a zone of the United States (and the few other countries that write so),
day first elsewhere and always with dots, and none in a zone the time zone database does
not place (``UTC``) unless one of the numbers cannot be a month. When a question names
several ("in June or July", "between June and August"), the span runs from the first day
to the last. Days still to come name none ("this weekend" asked on a weekday: nothing was
said then yet). Vague counts ("a few days ago", "a couple of weeks ago") name every day
they may mean; "the other day" is the past week, "last night" yesterday, "the last few
days" up to five days back and today. Days named after "since" or "after" run on to today
("since Monday", "after Christmas"); a unit before "after" or "before" names that much
next to them ("the day after Christmas", "the week before June 10"); "before" alone names
nothing (how long before?). Seasons and holidays ("last winter", "at Christmas") are
:mod:`.occasions`'.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta, tzinfo

from .occasions import holiday, main_day, occurrence, season
from .zones import place_of

_MONTHS = (
    "january", "february", "march", "april", "may", "june",
    "july", "august", "september", "october", "november", "december",
)  # fmt: skip
_SHORT = {m[:3]: i for i, m in enumerate(_MONTHS, start=1)} | {"sept": 9}
_FULL = {m: i for i, m in enumerate(_MONTHS, start=1)}
_VERBS = frozenset({"may", "march"})  # month words that are verbs too, in lowercase
# The part of a month "early", "mid" and "late" name: [first day, day after) (0: its end).
_THIRDS = {"early": (1, 11), "mid": (11, 21), "late": (21, 0)}
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_COUNTS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
}  # fmt: skip
# Counts people do not mean exactly: the fewest and the most units ago they stand for.
_VAGUE = {"a couple of": (1, 3), "a couple": (1, 3), "a few": (2, 5), "several": (3, 7)}

_MONTH = r"(?P<month>" + "|".join(sorted([*_FULL, *_SHORT], key=len, reverse=True)) + r")"
_FULL_MONTH = r"(?P<month>" + "|".join(_FULL) + r")"
_DAY = r"(?P<day>\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>(?:19|20)\d\d)"
_COUNT = r"(?P<count>\d{1,3}|" + "|".join([*_VAGUE, *_COUNTS]) + r")"
# "the last few days": the count without its article ("few", "couple of")
_SPAN_COUNT = (
    r"(?P<count>\d{1,3}|few|couple of|couple|several|"
    + "|".join(c for c in _COUNTS if c not in ("a", "an"))
    + r")"
)
_NUMERIC = r"(?P<a>\d{1,2})(?P<sep>[/.])(?P<b>\d{1,2})"
# Countries that write the month first (3/4 is March 4); Canada writes both ways.
_MONTH_FIRST = frozenset({"US", "PH", "FM", "MH", "PW", "BZ"})
_BOTH_WAYS = frozenset({"CA"})
_SEASON = r"(?P<season>spring|summer|autumn|fall|winter)"
_HOLIDAY = (
    r"(?P<holiday>christmas\s+eve|christmas\s+day|christmas|xmas|new\s+year['’]?s\s+eve"
    r"|new\s+year['’]?s\s+day|new\s+year['’]?s|halloween|valentine['’]?s\s+day|easter"
    r"|thanksgiving)"
)
_MONTH_PAIR = (
    r"(?P<word>in|during|between|from|throughout)\s+" + _FULL_MONTH
    + r"\s+(?:or|and|to|through|until|till|-|–)\s+(?P<last>" + "|".join(_FULL) + r")"
)  # fmt: skip

_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (kind, re.compile(pattern, re.IGNORECASE))
    for kind, pattern in (
        ("iso", rf"\b{_YEAR}-(?P<m>\d{{2}})-(?P<day>\d{{2}})\b"),
        ("date", rf"\b{_MONTH}\.?\s+{_DAY}\b(?:,?\s+{_YEAR}\b)?"),
        ("date", rf"\b{_DAY}\s+(?:of\s+)?{_MONTH}\b\.?(?:,?\s+{_YEAR}\b)?"),
        ("season", rf"\b(?P<word>in|during|over|this|last|since|after|before|throughout)\s+"
                   r"(?:the\s+)?"
                   rf"{_SEASON}(?:\s+(?:of\s+)?{_YEAR})?\b"),
        ("season", rf"\b{_SEASON}\s+(?:of\s+)?{_YEAR}\b"),
        ("holiday", rf"\b(?P<word>on|at|over|for|during|around|since|after|before|this|last)\s+"
                    rf"{_HOLIDAY}(?:\s+{_YEAR})?\b"),
        ("holiday", rf"\b{_HOLIDAY}\s+{_YEAR}\b"),
        ("numeric", r"\b(?P<word>on|from|of)\s+(?P<a>\d{1,2})(?P<sep>/)(?P<b>\d{1,2})"
                    r"(?:/(?P<y>\d{4}|\d\d))?(?![\d/]|\.\d)"),
        ("numeric", rf"\b{_NUMERIC}(?P=sep)(?P<y>\d{{4}})\b"),
        ("month", rf"\b{_FULL_MONTH}\s+(?:of\s+)?{_YEAR}\b"),
        ("months", rf"\b{_MONTH_PAIR}\b"),
        ("month", rf"\b(?P<word>in|during|since|after|before|throughout|early|late|mid|last|this)"
                  r"[\s-]+"
                  rf"{_FULL_MONTH}\b"),
        ("year", rf"\b(?P<word>in|during|since|throughout)\s+{_YEAR}\b"),
        ("day_before", r"\bthe day before yesterday\b"),
        ("yesterday", r"\b(?:yesterday|last night)\b"),
        ("other_day", r"\bthe other day\b"),
        ("today", r"\b(?:today|tonight|this morning|this afternoon|this evening)\b"),
        ("ago", rf"\b{_COUNT}\s+(?P<unit>days?|weeks?|months?|years?)\s+ago\b"),
        ("weekend", r"\b(?:last|this|this past|past|over the|on the)\s+weekend\b"),
        ("weekday", r"\b(?:on|last|this past|since|after|before)\s+(?P<weekday>"
                    + "|".join(_WEEKDAYS) + r")\b"),
        ("recent", rf"\b(?:last|past)\s+{_SPAN_COUNT}\s+(?P<unit>days|weeks|months|years)\b"),
        ("period", r"\b(?P<which>last|this|past)\s+(?P<unit>week|month|year)\b"),
    )
)  # fmt: skip


# What the user tells of themselves ("I fly to Paris in June", "I moved yesterday") asks
# for nothing said then; a question, a request or a search ("camping in June") does.
_TELLING = re.compile(
    r"^\W*(?:(?:so|and|but|ok|okay|well|oh|hey|hi|yes|yeah|no)\W+)*"
    r"(?:i|i'm|im|i've|i'd|i'll|we|we're|we've|we'd|we'll|my|our)\b",
    re.IGNORECASE,
)
_ASKING = re.compile(r"\?|\b(?:what|when|where|which|who|whom|whose|why|how)\b", re.IGNORECASE)


# A word every pattern above needs (or a digit): a query with none names no days, and
# most queries have none, so the patterns are not tried on them (the per-run path).
_NEEDED = re.compile(
    r"\d|\b(?:"
    + "|".join(
        [*_SHORT, *_WEEKDAYS, "yesterday", "today", "tonight", "this", "last", "past",
         "since", "after", "day", "week", "month", "year", "spring", "summer", "autumn",
         "fall", "winter", "christmas", "xmas", "new", "halloween", "valentine", "easter",
         "thanksgiving"]
    )
    + ")",
    re.IGNORECASE,
)  # fmt: skip

MAX_NAMED = 16
"""Named days read of one query at most (a long message is not read for ever)."""


# Words that name days counted from today: said in an older message they meant another
# day ("yesterday", in a message of June, is a day of June). Dates, months, years and
# weekdays name the same days whoever says them ("camping in June").
_RELATIVE = frozenset(
    {"day_before", "yesterday", "today", "other_day", "ago", "recent", "weekend", "period"}
)


@dataclass(frozen=True)
class Span:
    """The moments ``[start, end)`` a question names: whole days in the user's zone; and
    where in the question the words naming them relative to today are (``words``:
    ``(start, end)`` indexes)."""

    start: datetime
    end: datetime
    words: tuple[tuple[int, int], ...] = field(default=(), compare=False)


def unnamed(query: str, span: Span | None) -> str:
    """``query`` without the words naming its days relative to today ("What did I say
    yesterday?" -> "What did I say ?"): as words to match, they would find what mentions
    "yesterday", said on any day, while the days themselves are read apart. Dates,
    months, years and weekdays stay: "camping in June" finds "we went camping in June"."""
    if span is None:
        return query
    out, at = [], 0
    for start, end in sorted(span.words):
        out += [query[at:start], " "]
        at = end
    return "".join([*out, query[at:]])


def named_span(query: str, now: datetime, zone: tzinfo) -> Span | None:
    """The days ``query`` names, as moments; None when it names none, or tells of the user
    rather than asks (see the module)."""
    if not _NEEDED.search(query) or (_TELLING.match(query) and not _ASKING.search(query)):
        return None
    # Days still to come ("this weekend" asked on a Thursday) hold nothing said yet.
    days = [d for d in _named(query, now.astimezone(zone).date(), zone) if d[0] <= now]
    if not days:
        return None
    words = tuple(d[2] for d in days if d[2] is not None)
    return Span(min(d[0] for d in days), max(d[1] for d in days), words)


def _named(
    query: str, today: date, zone: tzinfo
) -> list[tuple[datetime, datetime, tuple[int, int] | None]]:
    """The spans of the first :data:`MAX_NAMED` named days found, pattern by pattern, each
    with where its words are if they name it relative to today (:data:`_RELATIVE`)."""
    days: list[tuple[datetime, datetime, tuple[int, int] | None]] = []
    taken: list[tuple[int, int]] = []  # a date's words are not read again as its month
    for kind, pattern in _PATTERNS:
        for match in pattern.finditer(query):
            if any(match.start() < end and start < match.end() for start, end in taken):
                continue
            try:
                found = _days(kind, match, today, zone)
                name = match.group("holiday") if kind == "holiday" else None
                main = main_day(name, found) if name and found else None
                found = _linked(query[: match.start()], match, found, today, main)
                span = (_midnight(found[0], zone), _midnight(found[1], zone)) if found else None
            except (ValueError, OverflowError):  # past the calendar: "9000 years ago"
                continue
            if span is not None and span[0] < span[1]:
                days.append((*span, match.span() if kind in _RELATIVE else None))
                taken.append(match.span())
                if len(days) == MAX_NAMED:
                    return days
    return days


_LINKED = re.compile(r"\b(since|after|before)\s+(?:the\s+)?$", re.IGNORECASE)
_UNIT = re.compile(r"\b(day|night|week|weekend|month|year)\s+$", re.IGNORECASE)
_UNIT_DAYS = {"day": 1, "night": 1, "week": 7, "month": 30, "year": 365}


def _linked(
    before: str,
    match: re.Match[str],
    found: tuple[date, date] | None,
    today: date,
    main: tuple[date, date] | None = None,
) -> tuple[date, date] | None:
    """The days named, as the word before them ("since", "after", "before"; in ``before``,
    the text ahead of the match, or leading the match) turns them: since or after, they run
    on to today (since, from their first day; after, from the day after their last); a unit
    before that word ("the day after Christmas", "the week before June 10") names that
    much just after or before them (or ``main``, a holiday's main day: "the day after
    Christmas" is the 26th); "before" alone names nothing (how long before?)."""
    if found is None:
        return None
    linked = _LINKED.search(before)
    word = linked.group(1).lower() if linked else match.group(0).split(None, 1)[0].lower()
    if word not in ("since", "after", "before"):
        return found
    unit = _UNIT.search(before[: linked.start()] if linked else before)
    if unit is not None and word != "since":
        return _next_to(main or found, unit.group(1).lower(), word == "after")
    if word == "before":
        return None
    return (found[0] if word == "since" else found[1]), today + timedelta(days=1)


def _next_to(found: tuple[date, date], unit: str, after: bool) -> tuple[date, date]:
    """The ``unit`` just after (or before) the days ``found``: "the week after Easter",
    "the weekend before Christmas" (the Saturday and Sunday nearest it on that side)."""
    if unit == "weekend":
        if after:
            saturday = found[1] + timedelta(days=(5 - found[1].weekday()) % 7)
        else:
            saturday = found[0] - timedelta(days=(found[0].weekday() - 5) % 7 or 7)
            if saturday + timedelta(days=2) > found[0]:  # a Sunday start: that Saturday's
                saturday -= timedelta(days=7)
        return saturday, saturday + timedelta(days=2)
    width = timedelta(days=_UNIT_DAYS[unit])
    return (found[1], found[1] + width) if after else (found[0] - width, found[0])


def _midnight(day: date, zone: tzinfo) -> datetime:
    """The moment ``day`` begins in ``zone``, in UTC (so that a span's length is real time)."""
    return datetime(day.year, day.month, day.day, tzinfo=zone).astimezone(UTC)


def _days(kind: str, match: re.Match[str], today: date, zone: tzinfo) -> tuple[date, date] | None:
    """The days ``[first, after)`` a match names, or None when it names no real day."""
    g = match.groupdict()
    tomorrow = today + timedelta(days=1)
    if kind == "numeric":
        return _numeric(g, today, zone)
    if kind in ("season", "holiday"):
        of = season(g["season"] or "", zone) if kind == "season" else holiday(g["holiday"] or "")
        year = int(g["year"]) if g.get("year") else None
        return occurrence(of, g.get("word"), year, today)
    if kind == "iso":
        one = _date(int(g["year"]), int(g["m"]), int(g["day"]))
        return None if one is None else (one, one + timedelta(days=1))
    if kind == "date":
        if g["month"] in _VERBS:  # "may 5", "march 3 miles": only "May 5", "March 3"
            return None
        month = _month_number(g["month"])
        one = _latest(month, int(g["day"]), today, g.get("year"))
        return None if one is None else (one, one + timedelta(days=1))
    if kind == "month":
        first = _first_of_month(g, today)
        word = (g.get("word") or "").lower()
        if word == "since":
            return first, tomorrow
        if word in _THIRDS:  # "early June": its first ten days; "late June": from the 21st
            start, end = _THIRDS[word]
            return first.replace(day=start), first.replace(day=end) if end else _next_month(first)
        return first, _next_month(first)
    if kind == "months":  # "in June or July", "between June and August": both, and between
        first = _first_of_month(g, today)
        month = _month_number(g["last"] or "")
        last = date(first.year + (month < first.month), month, 1)
        if last > today and month < first.month:  # across a new year: the latest such winter
            first, last = first.replace(year=first.year - 1), last.replace(year=last.year - 1)
        return first, _next_month(last)
    if kind == "year":
        year = int(g["year"])
        if g["word"].lower() == "since":
            return date(year, 1, 1), tomorrow
        return date(year, 1, 1), date(year + 1, 1, 1)
    if kind == "day_before":
        return today - timedelta(days=2), today - timedelta(days=1)
    if kind == "yesterday":
        return today - timedelta(days=1), today
    if kind == "today":
        return today, tomorrow
    if kind == "other_day":  # some day of the past week, not today
        return today - timedelta(days=7), today
    if kind == "ago":
        return _ago(g["count"].lower(), g["unit"].lower(), today)
    if kind == "recent":  # "the last few days": up to today, as far back as it may mean
        count = g["count"].lower()
        vague = _VAGUE.get(f"a {count}") or _VAGUE.get(count)
        n = vague[1] if vague else _COUNTS.get(count) or int(count)
        width = {"day": 1, "week": 7, "month": 30, "year": 365}[g["unit"].lower().rstrip("s")]
        return today - timedelta(days=n * width), tomorrow
    if kind == "weekend":
        saturday = today - timedelta(days=(today.weekday() - 5) % 7 or 7)
        if match.group(0).lower().split() == ["this", "weekend"]:  # the coming one, or now
            saturday = today + timedelta(days=5 - today.weekday())
        return saturday, saturday + timedelta(days=2)
    if kind == "weekday":
        wanted = _WEEKDAYS.index(g["weekday"].lower())
        back = (today.weekday() - wanted) % 7 or 7
        one = today - timedelta(days=back)
        return one, one + timedelta(days=1)
    return _period(g["which"].lower(), g["unit"].lower(), today)


def _numeric(g: dict[str, str | None], today: date, zone: tzinfo) -> tuple[date, date] | None:
    """A numeric date's day (see the module for which number is the month)."""
    a, b = int(g["a"] or 0), int(g["b"] or 0)
    if a > 12 >= b or g["sep"] == ".":
        day, month = a, b
    elif b > 12 >= a:
        month, day = a, b
    else:
        order = _order(zone)
        if order is None or a > 12:
            return None
        month, day = (a, b) if order == "md" else (b, a)
    year = g.get("y")
    if year is not None and len(year) == 2:  # the latest such year not after this one
        full = 2000 + int(year)
        year = str(full if full <= today.year else full - 100)
    one = _latest(month, day, today, year) if 1 <= month <= 12 else None
    return None if one is None else (one, one + timedelta(days=1))


def _order(zone: tzinfo) -> str | None:
    """How people in ``zone`` write a date: ``"md"``, ``"dm"``, or None (not known)."""
    place = place_of(zone)
    if place is None or place.countries & _BOTH_WAYS:
        return None
    if place.countries <= _MONTH_FIRST:
        return "md"
    return None if place.countries & _MONTH_FIRST else "dm"


def _date(year: int, month: int, day: int) -> date | None:
    try:
        return date(year, month, day)
    except ValueError:
        return None


def _month_number(name: str) -> int:
    name = name.lower()
    return _FULL.get(name) or _SHORT[name]


def _latest(month: int, day: int, today: date, year: str | None) -> date | None:
    """That day of ``year``, or without one the latest such day not after today."""
    if year:
        return _date(int(year), month, day)
    for back in range(9):  # 29 February comes back within 8 years
        one = _date(today.year - back, month, day)
        if one is not None and one <= today:
            return one
    return None


def _first_of_month(g: dict[str, str | None], today: date) -> date:
    """The first day of the month a match names (of its year, else :func:`_month_year`)."""
    month = _month_number(g["month"] or "")
    year = g.get("year")
    return date(int(year) if year else _month_year(month, today, g.get("word")), month, 1)


def _month_year(month: int, today: date, word: str | None) -> int:
    """The year of a month named without one: this year's unless it is still to come
    ("last May" in May: last year's)."""
    if (word or "").lower() == "this":
        return today.year
    if month > today.month or ((word or "").lower() == "last" and month == today.month):
        return today.year - 1
    return today.year


def _next_month(first: date) -> date:
    return date(first.year + first.month // 12, first.month % 12 + 1, 1)


def _ago(count: str, unit: str, today: date) -> tuple[date, date] | None:
    """ "3 days ago" names that day; weeks, months and years ago name that day give or
    take half a unit (people round)."""
    width = {"day": 1, "week": 7, "month": 30, "year": 365}[unit.rstrip("s")]
    if count in _VAGUE:  # "a few days ago": from the most to the fewest units ago
        fewest, most = _VAGUE[count]
        return today - timedelta(days=most * width), today - timedelta(days=fewest * width - 1)
    n = _COUNTS.get(count) or int(count)
    if width == 1:
        one = today - timedelta(days=n)
        return one, one + timedelta(days=1)
    middle = today - timedelta(days=n * width)
    return middle - timedelta(days=width // 2), middle + timedelta(days=width // 2 + 1)


def _period(which: str, unit: str, today: date) -> tuple[date, date]:
    """This or last calendar week (from Monday), month or year; "past" is the last 7, 30
    or 365 days."""
    if which == "past":
        width = {"week": 7, "month": 30, "year": 365}[unit]
        return today - timedelta(days=width), today + timedelta(days=1)
    if unit == "week":
        monday = today - timedelta(days=today.weekday())
        if which == "last":
            return monday - timedelta(days=7), monday
        return monday, monday + timedelta(days=7)
    if unit == "month":
        first = today.replace(day=1)
        if which == "last":
            previous = (first - timedelta(days=1)).replace(day=1)
            return previous, first
        return first, _next_month(first)
    start = date(today.year - (which == "last"), 1, 1)
    return start, date(start.year + 1, 1, 1)
