"""The offline answering model replies as an assistant would, from its input alone."""

from __future__ import annotations

from typing import Any

from mem01session.demo.offline_model import compose_answer
from mem01session.engine.render import FOOTER, HEADER, QUOTES_HEADER
from mem01session.session.items import MemoryCarrier

BLOCK = (
    f"{HEADER}- Lives in San Francisco\n- Lives in New York City (until 24 Nov 2026)\n"
    f'{QUOTES_HEADER}23 Nov 2026:\n- "I pay $2,400 a month in rent."\n{FOOTER}'
)


def asked(question: str, *earlier: str, block: str = BLOCK) -> str:
    items: list[Any] = [{"role": "user", "content": text} for text in earlier]
    current = {"role": "user", "content": question}
    items.append(MemoryCarrier(current, f"{block}\n\n{question}", block) if block else current)
    return compose_answer(items)


def test_a_question_is_answered_with_what_it_was_shown_said_to_the_user() -> None:
    assert asked("Where do I live now, and what was my rent?") == (
        "You live in San Francisco. Before that, you lived in New York City "
        '(until 24 Nov 2026). On 23 Nov 2026 you said: "I pay $2,400 a month in rent."'
    )


def test_a_note_about_the_user_is_said_to_them_whole() -> None:
    # "You keep bees on their roof." was its answer in the chat example.
    block = f"{HEADER}- Keeps bees on their roof\n{FOOTER}"
    assert asked("What do I keep on my roof?", block=block) == "You keep bees on your roof."


def test_what_it_was_not_shown_it_does_not_know() -> None:
    assert asked("Where do I work?") == "I don't know: nothing I was shown answers that."
    assert asked("Where do I live?", block="") == "I don't know: nothing I was shown answers that."
    assert asked("Where do I live?", "I live in Oslo.", block="") == (
        'Earlier here you said: "I live in Oslo."'
    )


def test_statements_and_small_talk_get_a_word_back() -> None:
    assert asked("I moved to Porto yesterday.") == "Noted."
    assert asked("Thanks, that's all for today.") == "You're welcome!"
    assert asked("Hi! Can you help me plan my budget?", block="") == "Hello! How can I help?"
    assert compose_answer([]) == "I was given no question."
