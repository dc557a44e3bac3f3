"""Short answers read with the question before them: "Lisbon." after "Where do you live?"."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest

from mem01session.extraction import Candidate, RuleExtractor, Turn, TurnMessage

NOW = datetime(2026, 12, 1, 12, tzinfo=UTC)


def read(
    before: str | None, answer: str, candidates: tuple[Candidate, ...] = ()
) -> list[tuple[str | None, str | None, str | None]]:
    turn = Turn("c", (TurnMessage("user", answer), TurnMessage("assistant", "Nice!")), NOW, before)
    ops = asyncio.run(RuleExtractor().extract(turn, candidates, NOW)).ops
    return [(op.key, op.content, op.evidence) for op in ops]


@pytest.mark.parametrize(
    ("before", "answer", "fact"),
    [
        ("Hello! Where do you live now?", "Lisbon.", ("home.city", "Lives in Lisbon")),
        ("And where are you from?", "Évora.", ("person.origin", "Is from Évora")),
        (
            "Where do you live? Just curious!",
            "In Porto, since May.",
            ("home.city", "Lives in Porto"),
        ),
        ("Where are you based these days?", "Berlin!", ("home.city", "Lives in Berlin")),
        ("Where are you from originally?", "Brazil.", ("person.origin", "Is from Brazil")),
        ("So where do you work?", "At Google.", ("work.employer", "Works at Google")),
        ("What do you do for a living?", "Nurse.", ("work.role", "Works as a nurse")),
        ("What's your job?", "An architect.", ("work.role", "Works as an architect")),
        ("What's your name?", "Sam, nice to meet you.", ("person.name", "Name is Sam")),
        ("How old are you?", "34.", ("person.age", "Is 34 years old")),
        ("And how old are you?", "34 years old!", ("person.age", "Is 34 years old")),
        ("Where did you grow up?", "Porto.", ("person.origin", "Is from Porto")),
        ("Where do you live now?", "Rio de Janeiro.", ("home.city", "Lives in Rio de Janeiro")),
        ("Any food allergies?", "Peanuts.", ("health.allergy.peanuts", "Is allergic to peanuts")),
        ("Do you have any pets?", "Yes, a cat named Pip.", ("pets.cat", "Has a cat named Pip")),
    ],
)
def test_a_short_answer_states_what_the_question_asked(
    before: str, answer: str, fact: tuple[str, str]
) -> None:
    # The evidence is the user's own words, not the statement they stand for.
    assert read(before, answer) == [(*fact, answer)]


@pytest.mark.parametrize(
    ("before", "answer"),
    [
        (None, "Lisbon."),  # nothing was asked
        ("How are you?", "Great."),  # not a question this reads
        ("Where does your sister live?", "Rome."),  # someone else's
        ("Where do you live? Anyway, tell me about your day. I have time.", "Porto."),
        ("Where do you live?", "Why do you ask?"),  # a question back
        ("Where do you live?", "I'd rather not say."),
        ("Where do you live?", "Somewhere nice."),
        ("Where do you live?", "Near the coast."),  # no place named
        ("Where do you live?", "Oh, the suburbs."),
        ("Where do you work?", "Home."),
        ("Where do you live?", "lisbon"),  # not written as a name
        ("Where do you live?", "Hmm."),
        ("Where do you live?", "Good question."),
        ("Where do you work?", "Big company."),
        ("What do you do?", "Nothing much."),
        ("Any allergies?", "None."),
        ("Do you have any pets?", "No."),
        ("Where do you live?", "It was a long week and I just want to rest now."),  # too long
    ],
)
def test_anything_else_states_nothing(before: str | None, answer: str) -> None:
    assert read(before, answer) == []


def test_a_full_sentence_is_read_as_said_and_a_move_still_supersedes() -> None:
    assert read("Where do you live?", "I live in Oslo.") == [
        ("home.city", "Lives in Oslo", "I live in Oslo.")
    ]
    nyc = Candidate("b1", "Lives in New York City", "home.city")
    turn = Turn("c", (TurnMessage("user", "San Francisco."),), NOW, "Where do you live now?")
    [op] = asyncio.run(RuleExtractor().extract(turn, (nyc,), NOW)).ops
    assert (op.op, op.target, op.content) == ("SUPERSEDE", "b1", "Lives in San Francisco")


def test_only_the_turns_first_message_answers_the_question_before() -> None:
    turn = Turn(
        "c",
        (TurnMessage("user", "Hmm."), TurnMessage("user", "Lisbon.")),
        NOW,
        "Where do you live?",
    )
    assert asyncio.run(RuleExtractor().extract(turn, (), NOW)).ops == ()
