"""The days a question names, read in the user's zone and relative to the recall's moment."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from mem01session.days.named import MAX_NAMED, Span, named_span, unnamed
from mem01session.days.occasions import holiday

# A Thursday.
NOW = datetime(2023, 11, 2, 12, 0, tzinfo=UTC)


def days(query: str, now: datetime = NOW, zone: str = "UTC") -> tuple[date, date] | None:
    """The first day named and the day after the last, in ``zone``."""
    span = named_span(query, now, ZoneInfo(zone))
    if span is None:
        return None
    tz = ZoneInfo(zone)
    return span.start.astimezone(tz).date(), span.end.astimezone(tz).date()


def one(y: int, m: int, d: int) -> tuple[date, date]:
    return date(y, m, d), date(y, m, d) + timedelta(days=1)


@pytest.mark.parametrize(
    ("query", "named"),
    [
        ("What painting did I show you on October 13, 2023?", one(2023, 10, 13)),
        ("what did I say on oct 13th", one(2023, 10, 13)),
        ("What happened on the 13th of October 2023?", one(2023, 10, 13)),
        ("Anything from 2023-10-13?", one(2023, 10, 13)),
        ("What did I do on December 24?", one(2022, 12, 24)),  # the latest one, not ahead
        ("What setback did I face in October 2023?", (date(2023, 10, 1), date(2023, 11, 1))),
        ("Where did I go camping in June?", (date(2023, 6, 1), date(2023, 7, 1))),
        ("What did I plan in December?", (date(2022, 12, 1), date(2023, 1, 1))),
        ("What did I buy last November?", (date(2022, 11, 1), date(2022, 12, 1))),
        ("What did I buy this November?", (date(2023, 11, 1), date(2023, 12, 1))),
        ("What did I read since September?", (date(2023, 9, 1), date(2023, 11, 3))),
        ("How often did I swim in 2022?", (date(2022, 1, 1), date(2023, 1, 1))),
        ("What did I say yesterday?", one(2023, 11, 1)),
        ("and the day before yesterday?", one(2023, 10, 31)),
        ("What did I eat today?", one(2023, 11, 2)),
        ("What did I tell you on Monday?", one(2023, 10, 30)),
        ("What did I tell you last Thursday?", one(2023, 10, 26)),  # not today
        ("What did I say three days ago?", one(2023, 10, 30)),
        ("What did I say 2 weeks ago?", (date(2023, 10, 16), date(2023, 10, 23))),
        ("What did we do last weekend?", (date(2023, 10, 28), date(2023, 10, 30))),
        ("What did I say last week?", (date(2023, 10, 23), date(2023, 10, 30))),
        ("What did I say this week?", (date(2023, 10, 30), date(2023, 11, 6))),
        ("What did I say last month?", (date(2023, 10, 1), date(2023, 11, 1))),
        ("What did I say in the past month?", (date(2023, 10, 3), date(2023, 11, 3))),
        ("What did I say last year?", (date(2022, 1, 1), date(2023, 1, 1))),
        ("Did I go in June, or on July 4?", (date(2023, 6, 1), date(2023, 7, 5))),
        ("Did I go in June or July?", (date(2023, 6, 1), date(2023, 8, 1))),
        ("What did I do between June and August?", (date(2023, 6, 1), date(2023, 9, 1))),
        ("What did I read from March to May?", (date(2023, 3, 1), date(2023, 6, 1))),
        # across a new year, the latest such span that has begun: last winter's
        ("Where did I ski between December and February?", (date(2022, 12, 1), date(2023, 3, 1))),
        ("What did I say last night?", one(2023, 11, 1)),
        ("What did I say the other day?", (date(2023, 10, 26), date(2023, 11, 2))),
        ("What did I say a couple of days ago?", (date(2023, 10, 30), date(2023, 11, 2))),
        ("What did I say a few days ago?", (date(2023, 10, 28), date(2023, 11, 1))),
        ("What did I say several days ago?", (date(2023, 10, 26), date(2023, 10, 31))),
        ("What did I say a few weeks ago?", (date(2023, 9, 28), date(2023, 10, 20))),
        ("Did I go in June, or this weekend?", (date(2023, 6, 1), date(2023, 7, 1))),
    ],
)
def test_a_question_names_these_days(query: str, named: tuple[date, date]) -> None:
    assert days(query) == named


@pytest.mark.parametrize(
    "query",
    [
        "Where do I live now?",
        "You may be right about that.",
        "I march 5 miles every morning.",
        "Mondays are hard for me.",
        "When did I move?",
        "What did I say on February 30?",
        "My code is 2023-13-45.",
        "When was I born in 1870?",
        "What did I say on 9999-12-31?",  # past the calendar: none, not an error
        "What did I say on 0001-01-01?",
        "What did I say 9000 years ago?",
        "I fly to Paris in June.",  # a plan, not a question: nothing said last June
        "I moved here yesterday.",
        "My sister visits in May.",
        "What are my plans this weekend?",  # asked on a Thursday: still to come
        "What will I say in 2024?",
        "Did I tell June and April about it?",  # names, not months: no word before them
    ],
)
def test_these_name_no_day(query: str) -> None:
    assert named_span(query, NOW, UTC) is None


@pytest.mark.parametrize(
    "query",
    [
        "Tell me what I said on Monday",
        "remind me what we discussed yesterday",
        "So, what did I say last week",
        "camping in June",  # a search
        "I forgot what I said on Monday.",
        "I moved yesterday, did I tell you?",
    ],
)
def test_questions_requests_and_searches_name_days(query: str) -> None:
    assert named_span(query, NOW, UTC) is not None


def test_a_date_is_read_once_not_again_as_its_month() -> None:
    assert days("What did I do in October 13?") == one(2023, 10, 13)
    assert days("What did I do on 13 October 2023?") == one(2023, 10, 13)


def test_days_are_the_users_days() -> None:
    late = datetime(2023, 11, 2, 23, 30, tzinfo=UTC)  # already 3 November in Tokyo
    span = named_span("What did I say yesterday?", late, ZoneInfo("Asia/Tokyo"))
    assert span == Span(
        datetime(2023, 11, 2, tzinfo=ZoneInfo("Asia/Tokyo")),
        datetime(2023, 11, 3, tzinfo=ZoneInfo("Asia/Tokyo")),
    )
    assert span.start == datetime(2023, 11, 1, 15, 0, tzinfo=UTC)  # 2 Nov, 00:00 in Tokyo
    assert days("What did I say yesterday?", late, "Asia/Tokyo") == one(2023, 11, 2)


def test_a_day_across_a_clock_change_is_the_whole_day() -> None:
    lisbon = ZoneInfo("Europe/Lisbon")  # clocks went back on 29 October 2023: 25 hours
    span = named_span("What did I say on October 29?", NOW, lisbon)
    assert span is not None
    assert span.end - span.start == timedelta(hours=25)


def test_29_february_without_a_year_is_the_latest_one() -> None:
    assert days("What did I say on February 29?") == one(2020, 2, 29)


def test_a_long_message_is_read_for_a_bounded_number_of_named_days() -> None:
    query = "What did I say " + "yesterday and " * 2000 + "on October 13?"
    assert days(query) == (date(2023, 10, 13), date(2023, 11, 2))
    many = "What did I say on " + ", ".join(f"October {d}" for d in range(1, 21)) + "?"
    assert days(many) == (date(2023, 10, 1), date(2023, 10, 1 + MAX_NAMED))  # the first 16


def test_this_weekend_on_a_weekend_day_is_the_one_under_way() -> None:
    saturday = datetime(2023, 11, 4, 12, 0, tzinfo=UTC)
    assert days("What did I say this weekend?", saturday) == (date(2023, 11, 4), date(2023, 11, 6))
    sunday = saturday + timedelta(days=1)
    assert days("What did I say this weekend?", sunday) == (date(2023, 11, 4), date(2023, 11, 6))


@pytest.mark.parametrize(
    ("query", "words"),
    [
        ("What did I say yesterday?", "What did I say  ?"),
        ("Did we camp in June or on July 4?", "Did we camp in June or on July 4?"),  # kept
        ("What did I say last week, or on Monday?", "What did I say  , or on Monday?"),
        ("What did I say two days ago?", "What did I say  ?"),
        ("Where do I live?", "Where do I live?"),
    ],
)
def test_the_words_naming_days_from_today_are_not_words_to_match(query: str, words: str) -> None:
    assert unnamed(query, named_span(query, NOW, UTC)) == words


@pytest.mark.parametrize(
    ("query", "named"),
    [
        ("What did we do over the summer?", (date(2023, 6, 1), date(2023, 9, 1))),
        ("What did I read in the fall?", (date(2023, 9, 1), date(2023, 12, 1))),  # begun
        ("What did I say last winter?", (date(2022, 12, 1), date(2023, 3, 1))),  # over
        ("What did I plant this spring?", (date(2023, 3, 1), date(2023, 6, 1))),
        ("What happened in the summer of 2022?", (date(2022, 6, 1), date(2022, 9, 1))),
        ("Where was I in winter 2021?", (date(2021, 12, 1), date(2022, 3, 1))),
        ("What did I read since the summer?", (date(2023, 6, 1), date(2023, 11, 3))),
        ("What did I get for Christmas?", (date(2022, 12, 24), date(2022, 12, 27))),
        ("What did I do on Christmas Eve?", one(2022, 12, 24)),
        ("Who did I see on New Year’s Eve?", one(2022, 12, 31)),
        ("What did I wear for Halloween?", one(2023, 10, 31)),
        ("What did we eat at Thanksgiving 2022?", (date(2022, 11, 24), date(2022, 11, 28))),
        ("Where did we go over Easter?", (date(2023, 4, 7), date(2023, 4, 11))),
        ("What did I buy last Valentine's Day?", one(2023, 2, 14)),
        ("Did I fall last week?", (date(2023, 10, 23), date(2023, 10, 30))),  # a verb
        ("Where did I buy the Christmas tree?", None),  # a thing, not a time
        ("What are my plans this Christmas?", None),  # still to come
    ],
)
def test_seasons_and_holidays_name_their_days(query: str, named: tuple[date, date] | None) -> None:
    assert days(query) == named


def test_a_season_is_the_southern_hemispheres_in_a_zone_there() -> None:
    assert days("What did we do over the summer?", zone="Australia/Sydney") == (
        date(2022, 12, 1),
        date(2023, 3, 1),
    )
    assert days("What did I say last winter?", zone="America/Argentina/Buenos_Aires") == (
        date(2023, 6, 1),
        date(2023, 9, 1),
    )


@pytest.mark.parametrize(
    ("year", "sunday"),
    [(2019, date(2019, 4, 21)), (2023, date(2023, 4, 9)), (2024, date(2024, 3, 31)),
     (2025, date(2025, 4, 20)), (2038, date(2038, 4, 25))],
)  # fmt: skip
def test_easter_is_the_gregorian_one(year: int, sunday: date) -> None:
    assert holiday("Easter")(year) == (sunday - timedelta(days=2), sunday + timedelta(days=2))


@pytest.mark.parametrize(
    ("query", "zone", "named"),
    [
        ("What did I say on 10/13?", "UTC", one(2023, 10, 13)),  # 13 is no month
        ("What did I say on 13/10?", "UTC", one(2023, 10, 13)),
        ("Tell me what I said on 10/13.", "UTC", one(2023, 10, 13)),
        ("What did I say on 3/4?", "UTC", None),  # March or April: who knows
        ("What did I say on 3/4?", "America/New_York", one(2023, 3, 4)),
        ("What did I say on 3/4?", "Europe/London", one(2023, 4, 3)),
        ("What did I say on 3/4/22?", "America/Chicago", one(2022, 3, 4)),
        ("What did I say on 3/4?", "America/Toronto", None),  # Canada writes both
        ("What happened on 13.10.2023?", "UTC", one(2023, 10, 13)),
        ("Anything said 13.10.2023?", "America/New_York", one(2023, 10, 13)),  # dots: day first
        ("Anything from 10/13/2023?", "UTC", one(2023, 10, 13)),
        ("Is 1/2 cup enough?", "America/New_York", None),  # a fraction: no word, no year
        ("What did I say on 2/30?", "America/New_York", None),  # no such day
        ("What did I say on 12/25?", "America/New_York", one(2022, 12, 25)),  # not ahead
    ],
)
def test_numeric_dates_are_read_as_the_users_zone_writes_them(
    query: str, zone: str, named: tuple[date, date] | None
) -> None:
    assert days(query, zone=zone) == named


@pytest.mark.parametrize(
    ("query", "named"),
    [
        ("What did I say in the last few days?", (date(2023, 10, 28), date(2023, 11, 3))),
        ("What did I eat the past couple of days?", (date(2023, 10, 30), date(2023, 11, 3))),
        ("What did I read over the past 3 weeks?", (date(2023, 10, 12), date(2023, 11, 3))),
        ("What did I buy in the last two months?", (date(2023, 9, 3), date(2023, 11, 3))),
    ],
)
def test_the_last_few_days_run_up_to_today(query: str, named: tuple[date, date]) -> None:
    assert days(query) == named
    span = named_span(query, NOW, ZoneInfo("UTC"))
    assert "last" not in unnamed(query, span) and "past" not in unnamed(query, span)


def test_a_zone_shared_with_canada_is_still_written_month_first() -> None:
    """America/Phoenix is Creston's too (zone1970.tab): zone.tab places it in the US."""
    assert days("What did I say on 3/4?", zone="America/Phoenix") == one(2023, 3, 4)


@pytest.mark.parametrize(
    ("query", "named"),
    [
        ("What have I said since Monday?", (date(2023, 10, 30), date(2023, 11, 3))),
        ("What did I read since October 13?", (date(2023, 10, 13), date(2023, 11, 3))),
        ("What happened after June 10, 2023?", (date(2023, 6, 11), date(2023, 11, 3))),
        ("What did I do after Christmas?", (date(2022, 12, 27), date(2023, 11, 3))),
        ("What did I say since last week?", (date(2023, 10, 23), date(2023, 11, 3))),
        ("What did I cook after September?", (date(2023, 10, 1), date(2023, 11, 3))),
        ("What did I read since September?", (date(2023, 9, 1), date(2023, 11, 3))),
        ("What did I say after today?", None),  # nothing yet
        # One unit after or before: that much next to the days named, not every day since.
        ("What did I do the day after Christmas?", one(2022, 12, 26)),  # from Christmas Day
        ("What did I do the day before Christmas?", one(2022, 12, 24)),
        ("Where was I the day after New Year's?", one(2023, 1, 2)),
        ("What did I say the week before June 10?", (date(2023, 6, 3), date(2023, 6, 10))),
        ("What did we do the week after Easter?", (date(2023, 4, 10), date(2023, 4, 17))),
        ("Where was I the weekend before Christmas?", (date(2022, 12, 17), date(2022, 12, 19))),
        ("Where was I the weekend after Halloween 2022?", (date(2022, 11, 5), date(2022, 11, 7))),
        ("Where was I the weekend after Halloween?", None),  # this Saturday: still to come
        ("What did I say the day before Monday?", one(2023, 10, 29)),
        ("What did I buy before Christmas?", None),  # how long before?
    ],
)
def test_since_and_after_run_on_to_today(query: str, named: tuple[date, date] | None) -> None:
    assert days(query) == named


def test_after_the_summer_runs_from_its_end() -> None:
    assert days("What did I start after the summer?") == (date(2023, 9, 1), date(2023, 11, 3))


@pytest.mark.parametrize(
    ("query", "named"),
    [
        ("What did I do in early June?", (date(2023, 6, 1), date(2023, 6, 11))),
        ("What did I plant mid-October?", (date(2023, 10, 11), date(2023, 10, 21))),
        ("Where was I in late December?", (date(2022, 12, 21), date(2023, 1, 1))),
    ],
)
def test_early_mid_and_late_name_a_third_of_the_month(query: str, named: tuple[date, date]) -> None:
    assert days(query) == named
