"""Scrubbing holds on any text and takes linear time (issue 14, finding 2).

What a turn goes through before it is stored as a job is ``redact_secrets(redact(text))``
(``queue.jobs.scrub``). On the worst-case inputs below the previous patterns backtracked
over the rest of the text from every start position, for seconds at these sizes (the
"before" column of the Scrubbing speed figures in docs/reliability.md); they take
milliseconds now, so the suite stays fast, and a return to backtracking would make it
hang. A test cannot assert a time, so each checks what the scrub made of the input.
"""

from __future__ import annotations

import random
import string
from datetime import UTC, datetime

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mem01session.queue.job_records import payload_for
from mem01session.queue.turns import TurnMessage
from mem01session.secrets.redaction import MASK, redact
from mem01session.secrets.scan import REDACTED, find_secrets, redact_secrets


def scrub(text: str) -> str:
    return redact_secrets(redact(text))[0]


_rng = random.Random(14)
HEX = "".join(_rng.choice("0123456789abcdef") for _ in range(100_000))
BASE64 = "".join(_rng.choice(string.ascii_letters + string.digits + "+/") for _ in range(100_000))


# -- worst cases: each took the old patterns many seconds -------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "I like hiking. " + "x" * 100_000,  # the message, a tenth of it
        "a" * 100_000,
        ("abc-" * 25_000) + "é",
        "a://b:" * 20_000,
        "eyJ-" * 25_000,
        "a:" * 50_000,
        "1 " * 50_000,
        "password is " * 10_000,  # every value is the next "password": all masked
        ":" * 100_000 + "@" * 100_000 + "=" * 100_000,
    ],
    ids=["x-run", "a-run", "dashed", "url-heads", "jwt-heads", "a-colon", "digits", "pw", "punct"],
)
def test_adversarial_inputs_complete_and_keep_ordinary_text(text: str) -> None:
    out = scrub(text)
    if text.startswith("password is"):  # each value is the next "password"
        assert out == f"password is {REDACTED} is " * 5_000
    else:
        assert out == text  # nothing there is a secret


def test_a_pasted_hex_blob_is_redacted_whole() -> None:
    text = f"Here is the dump: {HEX} thanks"
    assert scrub(text) == f"Here is the dump: {REDACTED} thanks"
    assert [m.label for m in find_secrets(text)] == ["token"]


def test_a_base64_blob_and_the_secrets_around_it() -> None:
    card, key = "4111 1111 1111 1111", "sk-proj-Q3x9LmT2vR8kP4nB7wZ1cY6d"
    text = f"card {card} then {BASE64} and key {key}, done"
    out, labels = redact_secrets(text)
    assert out == f"card {REDACTED} then {REDACTED} and key {REDACTED}, done"
    assert labels == ["card number", "token", "api key"]


def test_many_secrets_in_one_text_are_all_found() -> None:
    unit = "my password is hunter2x and my key sk-proj-Q3x9LmT2vR8kP4nB7wZ1cY6d; "
    assert redact(unit) == "my password is hunter2x and my key ***; "
    assert scrub(unit * 5_000) == f"my password is {REDACTED} and my key ***; " * 5_000


# -- overlapping finds merge, so no part of a secret stays ------------------------------


def test_overlapping_finds_merge_into_one_span() -> None:
    # A card number glued to a high-entropy run: the old scan kept the card and dropped
    # the overlapping token, leaving the rest of the run in the clear.
    text = "x a8Fk29dLq0Zm3Xp7Vn4R4111 1111 1111 1111 y"
    assert redact_secrets(text)[0] == f"x {REDACTED} y"


def test_a_token_glued_to_a_letter_of_another_script_is_still_found() -> None:
    token = "a8Fk29dLq0Zm3Xp7Vn4Rt6Yw1Bc5"
    for text in (f"ключ{token}", f"{token}é", f"é0-{token}-é"):
        assert token not in redact_secrets(text)[0], text


def test_a_jwt_is_found_but_a_dash_run_of_jwt_heads_is_not_rescanned() -> None:
    jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9"
    assert redact_secrets(f"token {jwt} ok")[0] == f"token {REDACTED} ok"
    assert redact_secrets("eyJ-" * 10)[0] == "eyJ-" * 10


# -- properties -------------------------------------------------------------------------

FORMATS = [
    "sk-proj-Q3x9LmT2vR8kP4nB7wZ1cY6d",
    "sk_live_4eC39HqLyjWDarjtT1zdp7dc",
    "AKIAIOSFODNN7EXAMPLE",
    "AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY",
    "ghp_aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3z",
    "github_pat_11ABCDEFG0abcdefghijklmnopqrstuv",
    "xoxb-123456789012-AbCdEfGhIjKl",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlF",
    "4111 1111 1111 1111",
    "5500-0000-0000-0004",
    "DE89 3704 0044 0532 0130 00",
    "GB82 WEST 1234 5698 7654 32",
    "123-45-6789",
    "a8Fk29dLq0Zm3Xp7Vn4Rt6Yw1Bc5",
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA7\n-----END RSA PRIVATE KEY-----",
]
PHRASES = [
    "my password is {}",
    "Password: {}",
    "pwd={}",
    "the PIN code for the bank is {}",
    "api_key = {}",
    "client secret: {}",
    "Authorization: Bearer {}",
    "postgres://bob:{}@db.internal/app",
    "redis://:{}@cache:6379/0",
    "host=db password={} dbname=app",
    # Other languages: the password said the way their speakers say it.
    "我的密码是{}",
    "密碼：{}",
    "パスワードは{}",
    "내 비밀번호는 {}",
    "Mi contraseña es {}",
    "mot de passe : {}",
    "Mein Passwort ist {}",
    "Minha senha é {}",
    "La mia password è {}",
    "Мой пароль — {}",
    "Mijn wachtwoord is {}",
    "Moje hasło to {}",
    "Mitt lösenord är {}",
    "Şifrem: {}",
    "Moje heslo je {}",
    "jelszó: {}",
    "Mật khẩu của tôi là {}",
    "Kata sandi saya adalah {}",
    "Ο κωδικός μου είναι {}",
    "הסיסמה שלי היא {}",
    "كلمة المرور هي {}",
    "पासवर्ड: {}",
    "รหัสผ่านคือ{}",
]
# Around a planted secret: any text, but set apart by a separator (a secret glued to
# other characters is another string: "94111 1111 1111 1111" is no card number, and
# digits one space away belong to the number).
context = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=60
)
separator = st.sampled_from(["\n", ". ", ", ", " and ", " (", ") ", "\t", "; "])
value = st.from_regex(r"[A-Za-z]{4,8}[0-9]{2,4}[A-Za-z0-9._~+/\-]{6,12}", fullmatch=True)
fuzz = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@fuzz
@given(context, separator, st.sampled_from(FORMATS), separator, context)
def test_a_planted_secret_never_survives(
    before: str, sep1: str, secret: str, sep2: str, after: str
) -> None:
    text = before + sep1 + secret + sep2 + after
    out = scrub(text)
    assert secret not in out
    assert scrub(out) == out


@fuzz
@given(context, separator, st.sampled_from(PHRASES), value, separator, context)
def test_a_planted_password_never_survives(
    before: str, sep1: str, phrase: str, secret: str, sep2: str, after: str
) -> None:
    text = before + sep1 + phrase.format(secret) + sep2 + after
    out = scrub(text)
    assert secret not in out
    assert scrub(out) == out


@fuzz
@given(st.text(max_size=300))
def test_scrubbing_is_idempotent(text: str) -> None:
    once = scrub(text)
    assert scrub(once) == once


@fuzz
@given(
    st.lists(
        st.one_of(
            st.sampled_from(
                ["password", " is ", ": ", "=", "://", "@", "sk-", "eyJ", "-", " ", "key"]
            ),
            st.sampled_from(FORMATS),
            st.text("0123456789 -", max_size=25),
            st.text(string.ascii_letters + string.digits + "_-+/=", max_size=40),
        ),
        max_size=12,
    )
)
def test_idempotent_on_secret_shaped_fragments(parts: list[str]) -> None:
    once = scrub("".join(parts))
    assert scrub(once) == once


@pytest.mark.parametrize(
    "text",
    [
        "card 4111 1111 1111 1111 12/27 cvc 123",  # the expiry is one space away
        "order 12 4111 1111 1111 1111",
        "4111-1111-1111-1111-05",
    ],
)
def test_a_card_number_next_to_another_number_is_found(text: str) -> None:
    out, labels = redact_secrets(text)
    assert "1111 1111" not in out and "1111-1111" not in out
    assert labels == ["card number"]


def test_an_exposed_neighbour_is_scrubbed_in_the_same_call() -> None:
    # "sk-password" is glued to the SSN (no word boundary) until the SSN is replaced.
    assert scrub("123-45-6789sk-password") == f"{REDACTED}***"
    assert redact_secrets("see 123-45-6789AKIAIOSFODNN7EXAMPLEX")[0] == f"see {REDACTED}"


def test_lone_surrogates_and_nul_around_secrets() -> None:
    key = "sk-proj-Q3x9LmT2vR8kP4nB7wZ1cY6d"
    text = f"\udcffkey: hunter2x9\x00 and \ud800 4111 1111 1111 1111\x00{key}"
    out = scrub(text)
    assert "hunter2x9" not in out and "4111" not in out and "Q3x9" not in out
    assert "\udcff" in out and "\ud800" in out and scrub(out) == out


def test_a_secret_only_turn_keeps_nothing_of_the_secret() -> None:
    assert scrub("sk-proj-Q3x9LmT2vR8kP4nB7wZ1cY6d") == MASK  # redact() masks it first
    assert redact_secrets("sk-proj-Q3x9LmT2vR8kP4nB7wZ1cY6d") == (REDACTED, ["api key"])
    assert scrub("postgres://bob:s3cretpw@db/app") == f"postgres://bob:{REDACTED}@db/app"
    assert MASK not in scrub("password=hunter2x")


# -- password phrases stay within their sentence (issue 24) ------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "I noticed a pin on your purse. Is Spider-Man your favorite?",
        "I noticed a pin on your purse Is Spider-Man your favorite?",
        "She gave me a pin for my jacket. Was that hers?",
        "I lost the pin to the bike lock! Is there a spare?",
        "Where is the password for the wifi? Is it on the router?",
    ],
)
def test_a_phrase_does_not_reach_into_the_next_sentence(text: str) -> None:
    assert find_secrets(text) == []
    assert scrub(text) == text


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("my PIN is 7391", "7391"),
        ("pin code: 4821", "4821"),
        ("Pin is 0000 for the door", "0000"),
        ("My Pin Is 4821, don't tell", "4821"),
        ("PIN IS 4821", "4821"),
        ("password for gmail is hunter22", "hunter22"),
        ("the password for gmail.com is hunter22", "hunter22"),
        ("The PIN for St. Mary is 4821", "4821"),
        ("the passcode to the safe was 889921", "889921"),
    ],
)
def test_password_phrases_are_still_found(text: str, secret: str) -> None:
    assert secret not in scrub(text)
    assert [m.label for m in find_secrets(text)] == ["password"]


# -- codes, PINs and passphrases said in passing (issue 26) -------------------------------


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("Door code is Kx9!mQ2z", "Kx9!mQ2z"),
        ("My passphrase is correct horse battery staple", "horse battery staple"),
        ("Uses the PIN 7391 for the bank", "7391"),
        ("Alarm code 4821", "4821"),
        ("The code for the door is Kx9!mQ2z", "Kx9!mQ2z"),
        ("the code to my front door is 5512, don't share it", "5512"),
        ("our wifi code: HomeNet-8821", "HomeNet-8821"),
        ("garage code was 0091", "0091"),
    ],
)
def test_codes_pins_and_passphrases_are_found(text: str, secret: str) -> None:
    assert secret not in scrub(text)
    assert {m.label for m in find_secrets(text)} == {"password"}
    # The job row keeps the turn scrubbed, so the code never reaches the database.
    payload = payload_for([TurnMessage("user", text)], datetime(2026, 1, 1, tzinfo=UTC))
    assert secret not in str(payload)


@pytest.mark.parametrize(
    "text",
    [
        "The door code is written on the fridge.",
        "the garage code changed last week",
        "My passphrase is stored safely in my manager.",
        "The code for the app is on GitHub.",
        "I wrote code for the door sensor yesterday.",
        "Our zip code is 94110.",
        "Put pin 2 in slot 4 of the board.",
        "The access code is long, I never remember it.",
    ],
)
def test_talk_about_codes_is_not_a_code(text: str) -> None:
    assert find_secrets(text) == []
    assert scrub(text) == text


@pytest.mark.parametrize(
    "text",
    [
        "我的密码很长，我记不住。",
        "パスワードを忘れました。",
        "Mi contraseña es la misma que antes.",
        "Le mot de passe est expiré.",
        "Mein Passwort ist abgelaufen.",
        "A senha e o usuário estão certos.",
        "La parola chiave è importante.",
        "Mi contraseña no es segura.",
        "Moje heslo je příliš krátké.",
        "Mein Passwort ist zu kurz.",
    ],
)
def test_talk_about_a_password_in_another_language_is_kept(text: str) -> None:
    assert redact_secrets(text) == (text, [])


@pytest.mark.parametrize(
    ("text", "redacted"),
    [
        ("my card is 4111 1111 1111 1111 exp 12/27 cvv 123", f"my card is {REDACTED}"),
        ("4111-1111-1111-1111, expires 12/2027, CVC: 4821. Thanks", f"{REDACTED}. Thanks"),
        ("card 5500 0000 0000 0004 valid thru 01/29 and security code 987", f"card {REDACTED}"),
        ("card 4111 1111 1111 1111 12/27 cvc 123", f"card {REDACTED}"),
        ("the cvv is 123", f"the {REDACTED}"),  # a card's code said alone
        ("CVC: 4821 for the new card", f"{REDACTED} for the new card"),
    ],
)
def test_a_cards_expiry_and_code_go_with_it(text: str, redacted: str) -> None:
    out, labels = redact_secrets(text)
    assert out == redacted
    assert labels  # "security code 987" is found as a code too: the span is one


@pytest.mark.parametrize(
    "text",
    ["I was born 12/27", "I ran 5 miles exp 12/27", "order 123 ships 12/27", "cvv pharmacy"],
)
def test_dates_and_numbers_without_a_card_stay(text: str) -> None:
    assert redact_secrets(text) == (text, [])
