"""The rule extractor on real dialogue (issue 24): turns from LoCoMo that it read wrongly.

Each of the issue's examples is its own test: the turn stores no belief, or a correct one.
Then the general classes behind them, each with turns that must still give a belief.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from mem01session.extraction import Candidate, RuleExtractor, Turn, TurnMessage
from mem01session.secrets.scan import find_secrets, redact_secrets

NOW = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)

Row = tuple[str, str | None, str | None]


async def _beliefs(text: str, candidates: tuple[Candidate, ...] = ()) -> list[Row]:
    turn = Turn("locomo", (TurnMessage("user", text), TurnMessage("assistant", "Nice!")), NOW)
    extraction = await RuleExtractor().extract(turn, candidates, NOW)
    return [(op.op, op.key, op.content) for op in extraction.ops]


# -- the examples, one test each ------------------------------------------------


async def test_a_wish_to_the_other_person_is_no_belief() -> None:
    # was "Enjoys the rest of your day": "enjoy" read as the user's second verb
    assert await _beliefs("Take care and enjoy the rest of your day.") == []


async def test_a_noun_after_and_is_not_a_verb_of_the_user() -> None:
    # was "Loves for game development is incredible"
    assert await _beliefs("Your determination and love for game development is incredible.") == []


async def test_working_as_a_team_is_not_a_job() -> None:
    # was work.role "Works as a team", which then superseded "Works as a nurse"
    nurse = (Candidate("b1", "Works as a nurse", "work.role"),)
    text = "It was a chance to learn something new and work as a team."
    assert await _beliefs(text) == []
    assert await _beliefs(text, nurse) == []
    assert await _beliefs("I work as a team with my colleagues.", nurse) == []


async def test_a_clause_after_it_is_no_object() -> None:
    # was "Loves that'll keep their confidence up"
    assert await _beliefs("You're right, I love it and that'll keep my confidence up.") == []


async def test_what_belongs_to_the_other_person_is_no_like() -> None:
    # was "Loves your turtles"
    assert await _beliefs("I love your turtles") == []
    assert await _beliefs("I love your turtles! They're so cute.") == []


def test_an_ordinary_sentence_about_a_pin_is_no_secret() -> None:
    # was "... Is [redacted] your favorite?"
    text = "I noticed a pin on your purse. Is Spider-Man your favorite?"
    assert find_secrets(text) == []
    assert redact_secrets(text) == (text, [])


# -- the classes behind them ------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        # imperatives and wishes addressed to the other person
        "Enjoy your weekend and have fun!",
        "Have a great day and enjoy the concert.",
        "Good luck and enjoy every minute of it.",
        # a verb after "and" whose subject is not the user
        "So much energy and love everywhere.",
        "It taught me that tough times don't last - hope and love exist.",
        "I'm much happier being around those who accept and love me.",
        "I love the self-acceptance and love theme.",
        # statements about "you" / "your"
        "I love how you use it to tell your stories.",
        "I love that you chose pottery for your art.",
        "I love the way you paint.",
        "I prefer your version.",
        "I'm allergic to your cat.",
        "My favorite part is when you sang.",
        "My favorite thing about you is your smile.",
        "I love you guys.",
        # objects that are not noun phrases: pronouns, "that'll ...", clauses
        "I love it!",
        "I love that!",
        "I love to hear that.",
        "I like it when it rains.",
        "I love everything about it.",
        "I love how it's both a creative outlet and a form of therapy.",
        "I love how it shows the togetherness and power you were talking about.",
        "I hate when people are late.",
        # "the ..." said of something in view
        "I love the colors in this one.",
        "I love all the yellow leaves, it looks so cozy.",
        "I love it [image: a photo of a dog]",
        "I like to think so.",
    ],
)
async def test_no_belief(text: str) -> None:
    assert await _beliefs(text) == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I love creating art!", [("ADD", "likes.creating-art", "Loves creating art")]),
        ("Yeah, I play clarinet!", [("ADD", "activity.clarinet", "Plays clarinet")]),
        ("You know I love live music.", [("ADD", "likes.live-music", "Loves live music")]),
        ("I love being a mom.", [("ADD", "likes.being-mom", "Loves being a mom")]),
        ("I love the outdoors.", [("ADD", "likes.outdoors", "Loves the outdoors")]),
        ("I love the Beatles.", [("ADD", "likes.beatles", "Loves the Beatles")]),
        (
            "I love painting [image: a photo of a sunset]",
            [("ADD", "likes.painting", "Loves painting")],
        ),
        ("I live in Paris, it's great.", [("ADD", "home.city", "Lives in Paris")]),
        (
            "I love camping trips with my fam, 'cause nature brings such peace.",
            [("ADD", "likes.camping-trips-with-their-fam", "Loves camping trips with their fam")],
        ),
        (
            "I enjoy reading and love playing with my kids.",
            [
                ("ADD", "likes.reading", "Enjoys reading"),
                ("ADD", "likes.playing-with-their-kids", "Loves playing with their kids"),
            ],
        ),
        (
            "I'm a nurse and work at St. Mary's.",
            [
                ("ADD", "work.role", "Works as a nurse"),
                ("ADD", "work.employer", "Works at St. Mary's"),
            ],
        ),
        ("I work as a nurse and love it.", [("ADD", "work.role", "Works as a nurse")]),
        (
            "I love to read and write poetry.",
            [
                ("ADD", "likes.read", "Loves to read"),
                ("ADD", "likes.write-poetry", "Loves to write poetry"),
            ],
        ),
        ("I have two turtles.", [("ADD", "pets.turtle", "Has two turtles")]),
        (
            'I love "Perfect" by Ed Sheeran.',
            [("ADD", "likes.perfect-by-ed-sheeran", 'Loves "Perfect" by Ed Sheeran')],
        ),
        # a comma piece joined to the user's clause leaves it the user's
        (
            "I'm based in Austin, Texas, and work at Dell.",
            [
                ("ADD", "home.city", "Lives in Austin, Texas"),
                ("ADD", "work.employer", "Works at Dell"),
            ],
        ),
        (
            "I live in Lisbon, work at Farfetch and play tennis.",
            [("ADD", "home.city", "Lives in Lisbon"), ("ADD", "activity.tennis", "Plays tennis")],
        ),
        # a verb said again after "and" is a second statement unless it is love/like
        (
            "I moved out of NYC and moved to Boston.",
            [("ADD", "home.city", "Lives in Boston")],
        ),
        (
            "I play tennis and play golf.",
            [("ADD", "activity.tennis", "Plays tennis"), ("ADD", "activity.golf", "Plays golf")],
        ),
        (
            "My favorite book is Charlotte's Web.",
            [("ADD", "favorite.book", "Favorite book is Charlotte's Web")],
        ),
    ],
)
async def test_still_a_belief(text: str, expected: list[Row]) -> None:
    assert await _beliefs(text) == expected


# -- linear time: each of these took the reader seconds to minutes at this size ----------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I love jazz" + " " * 50_000 + "music", [("ADD", "likes.jazz-music", "Loves jazz music")]),
        ("I love hiking" + " now" * 12_500, [("ADD", "likes.hiking", "Loves hiking")]),
        ("I love " + "and " * 12_500, []),
        ("I " + "love, " * 8_000, []),
        ("I love the " + "x and " * 8_000, []),
        ("I live in Oslo" + "\t \n" * 15_000, [("ADD", "home.city", "Lives in Oslo")]),
    ],
    ids=["spaces", "now-tail", "ands", "love-commas", "the-x-and", "blank-lines"],
)
async def test_hostile_input_is_read_in_linear_time(text: str, expected: list[Row]) -> None:
    assert await _beliefs(text) == expected
