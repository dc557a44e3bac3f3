"""Secrets never survive screening; ordinary numbers do."""

from __future__ import annotations

import re
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mem01session.engine.ops import MAX_CONTENT_CHARS, MAX_EVIDENCE_CHARS, Op
from mem01session.extraction import contains_secret, screen, screen_ops
from mem01session.extraction.hygiene import clean_text
from mem01session.secrets.scan import REDACTED, redact_secrets

SECRETS = {
    "api key": "sk-proj-Q3x9LmT2vR8kP4nB7wZ1cY6d",
    "aws access key": "AKIAIOSFODNN7EXAMPLE",
    "github token": "ghp_aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3z",
    "slack token": "xoxb-123456789012-AbCdEfGhIjKl",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlF",
    "card number": "4111 1111 1111 1111",
    "card number dashed": "5500-0000-0000-0004",
    "iban": "DE89 3704 0044 0532 0130 00",
    "token": "a8Fk29dLq0Zm3Xp7Vn4Rt6Yw1Bc5",
}
PHRASES = {
    "password": ("my password is hunter2", "hunter2"),
    "pw": ("pw: Tr0ub4dor&3", "Tr0ub4dor&3"),
    "bearer": ("Authorization: Bearer abcDEF123ghiJKL456", "abcDEF123ghiJKL456"),
    "pin": ("my PIN is 4921", "4921"),
    "url": ("postgres://bob:s3cretpw@db.internal/app", "s3cretpw"),
}


@pytest.mark.parametrize("secret", SECRETS.values(), ids=SECRETS.keys())
def test_known_secret_formats_are_found(secret: str) -> None:
    text = f"here it is: {secret} ok"
    assert contains_secret(text)
    redacted, labels = redact_secrets(text)
    assert secret not in redacted and REDACTED in redacted and labels


@pytest.mark.parametrize(("text", "secret"), PHRASES.values(), ids=PHRASES.keys())
def test_password_phrases_lose_their_value(text: str, secret: str) -> None:
    redacted, _ = redact_secrets(text)
    assert secret not in redacted


@pytest.mark.parametrize(
    "text",
    [
        "I pay $2,400 a month in rent.",
        "I was born in 1987 and moved in 2021.",
        "Call me at 555-123-4567.",
        "My number is +1 415 555 2671.",
        "Order 1234567890123 arrived.",  # 13 digits, not Luhn-valid
        "4111 1111 1111 1112",  # Luhn fails
        "I live at 221B Baker Street, London NW1 6XE.",
        "See https://example.com/2024/05/some-article-title-here",
        "My password is the same as before.",
        "The secret to good pasta is salt.",
        "Internationalization-and-localization-work",
        "Lives in San Francisco",
    ],
)
def test_benign_text_is_not_flagged(text: str) -> None:
    assert not contains_secret(text)
    assert redact_secrets(text) == (text, [])


def test_a_fact_that_is_a_secret_is_dropped() -> None:
    ops = [
        Op.add("Password is hunter2", evidence="my password is hunter2"),
        Op.add(f"Uses API key {SECRETS['api key']}"),
        Op.add("Lives in Paris", key="home.city"),
        Op.add("Has card", key=f"card.{SECRETS['card number'].replace(' ', '')}"),
    ]
    result = screen(ops)
    assert [op.content for op in result.ops] == ["Lives in Paris"]
    assert len(result.notes) == 3
    assert all("hunter2" not in n and SECRETS["api key"] not in n for n in result.notes)


def test_secrets_in_evidence_and_reason_are_redacted_and_recorded() -> None:
    op = Op.supersede(
        "b1",
        "Works at Acme",
        evidence=f"I joined Acme, token {SECRETS['github token']} for the repo",
        reason=f"new job; card {SECRETS['card number']}",
    )
    (out,) = screen_ops([op])
    assert out.content == "Works at Acme"
    assert SECRETS["github token"] not in (out.evidence or "")
    assert REDACTED in (out.evidence or "")
    assert SECRETS["card number"] not in (out.reason or "")
    assert out.reason is not None
    assert "evidence redacted: github token" in out.reason
    assert "reason redacted: card number" in out.reason


def test_planted_secrets_never_survive_anywhere() -> None:
    # Bare formats anywhere; password-like values in the phrases that mark them.
    plants = [(s, s) for s in SECRETS.values()] + list(PHRASES.values())
    planted = [secret for _, secret in plants]
    ops = []
    for text, _ in plants:
        ops.append(Op.add(f"Lives in Paris, {text}", evidence=f"see {text}"))
        ops.append(Op.add("Lives in Paris", evidence=f"I live in Paris. And {text}."))
        ops.append(Op.invalidate("b1", f"because {text}", evidence=f"well, {text}"))
    for op in screen_ops(ops):
        for field in (op.content, op.key, op.evidence, op.reason):
            for secret in planted:
                assert secret not in (field or ""), (secret, field)


def test_text_is_cleaned_and_capped() -> None:
    assert clean_text("  Lives\x00 in\tParis\n\x07 ") == "Lives in Paris"
    (op,) = screen_ops([Op.add("x" * 5000, evidence="y " * 2000, key=" home.city ")])
    assert op.content is not None and len(op.content) == MAX_CONTENT_CHARS
    assert op.evidence is not None and len(op.evidence) <= MAX_EVIDENCE_CHARS
    assert op.key == "home.city"
    assert "\x00" not in op.content


def test_clean_ops_pass_unchanged() -> None:
    op = Op.add("Lives in Paris", key="home.city", evidence="I live in Paris.")
    assert screen_ops([op]) == [op]


def _clean_text_by_category(text: str) -> str:
    """The definition :func:`clean_text` keeps, one character at a time."""
    kept = [
        " " if ch in "\t\n\r\v\f" else ch
        for ch in text
        if ch in "\t\n\r\v\f" or unicodedata.category(ch) not in ("Cc", "Cs")
    ]
    return re.sub(r"\s+", " ", "".join(kept)).strip()


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200) | st.text("\x00\x1c\x1f\x85\t\n \u2028\ud800a", max_size=40))
def test_clean_text_removes_exactly_control_characters_and_surrogates(text: str) -> None:
    assert clean_text(text) == _clean_text_by_category(text)


def test_a_huge_evidence_is_screened_and_capped() -> None:
    key = SECRETS["api key"]
    evidence = "I like hiking. " + "x" * 400 + f" {key} " + "y " * 500_000  # about 1 MB
    (op,) = screen_ops([Op.invalidate("b1", evidence, evidence=evidence)])
    assert op.evidence is not None and len(op.evidence) <= MAX_EVIDENCE_CHARS
    assert key[:12] not in op.evidence and REDACTED in op.evidence
    assert op.reason is not None and key[:12] not in op.reason


def test_a_secret_cut_by_the_content_cap_still_drops_the_op() -> None:
    content = "Likes " + "x" * (MAX_CONTENT_CHARS - 12) + " " + SECRETS["api key"]
    assert screen_ops([Op.add(content)]) == []
