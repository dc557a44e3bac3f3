"""Small talk: what states nothing about the user is told from what does."""

from __future__ import annotations

import pytest

from mem01session.engine.small_talk import forget, is_small_talk

SMALL_TALK = [
    "Thanks, that's all for today.",
    "Go for it, Jon! You got this!",
    "Wow! What got you into running?",
    "Hey Caroline! Missed you. Anything new?",
    "That sounds great, Mel!",
    "You're doing something amazing! Good luck!",
    "Glad you had support!",
    "Haha, love that!",
    "Cool! What did it look like?",
    "Good morning!",
    "Ok, bye!",
]
STATEMENTS = [
    "I live in Lisbon.",
    "Lisbon.",
    "Bought new boots.",
    "Vegetarian now.",
    "Thanks! I moved to Porto last week.",
    "Wow, I finally ran a marathon.",
    "Thanks to my sister I adopted a cat.",
    "Researching adoption agencies, it's been a dream.",
    "It was Matt Patterson, he is so talented!",
    "My dog Rex is sick?! No, he is fine.",
    "Ich wohne in Berlin.",
    "我住在北京。",
    "🙂",
    "",
]


@pytest.mark.parametrize("text", SMALL_TALK)
def test_words_that_state_nothing_are_small_talk(text: str) -> None:
    assert is_small_talk(text)


@pytest.mark.parametrize("text", STATEMENTS)
def test_one_sentence_that_states_something_is_not(text: str) -> None:
    assert not is_small_talk(text)


def test_an_answer_to_a_question_is_not_small_talk() -> None:
    assert is_small_talk("Yes!")
    assert not is_small_talk("Yes!", "Do you still live in Paris?")
    assert not is_small_talk("Haha, sure.", "Hello! Is your dog a beagle?")
    assert is_small_talk("Yes!", "Here is the list. Enjoy.")  # nothing was asked


def test_what_it_remembers_is_forgotten() -> None:
    is_small_talk("Thanks, Ana!")
    assert is_small_talk.cache_info().currsize > 0
    forget()
    assert is_small_talk.cache_info().currsize == 0
