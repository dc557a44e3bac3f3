r"""The detectors of :mod:`mem01session.secrets.scan`: patterns and value checks.

Each pattern in :data:`DETECTORS` starts with a literal, never with a lookbehind, a class
or an alternation, so that ``re`` finds its candidates with a fast substring search; a
word boundary before the literal is written as a lookbehind *after* it
(``sk-(?<!\wsk-)``), which keeps the literal first. After that, a repetition either
stops at a character the next step needs (possessive where backtracking cannot help),
or is bounded. The card, SSN and IBAN patterns start with a digit or a capital, which is
everywhere in some texts: they are only tried at the anchors :data:`MAPPED_DIGIT_ANCHOR`
finds.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from .redaction import URL_PASSWORD

# Kinds, most specific first: where finds of several kinds overlap, the merged span is
# named after the first.
LABELS = (
    "private key",
    "api key",
    "aws access key",
    "github token",
    "slack token",
    "jwt",
    "bearer token",
    "url password",
    "password",
    "secret",
    "card number",
    "iban",
    "ssn",
    "token",
)

# Values after "password is" that are ordinary words, not the secret itself.
_NOT_A_SECRET = frozenset(
    "a an the my your our their his her its same different new old too very really "
    "not never always expired wrong correct saved stored long short required "
    # ... and in the other languages whose "password is" is recognized (see below)
    "una uno mismo misma igual nueva nuevo muy demasiado caducada incorrecta correcta "
    "guardada larga corta une mon même nouveau nouvelle trop très expiré incorrect "
    "correct enregistré long court das der die ein eine mein meine gleich neu neues "
    "sehr abgelaufen falsch richtig gespeichert lang kurz uma meu minha mesma nova "
    "muito expirada errada certa salva longa curta una mia stessa nuova molto scaduta "
    "sbagliata giusta lunga corta het mijn zelfde nieuw verlopen fout juist lang kort "
    "moje takie samo nowe stare bardzo błędne такой же новый старый очень неверный "
    "samma nytt gammalt för fel rätt samme nytt gammelt for feil riktig sama uusi "
    "vanha liian väärä oikea aynı yeni eski çok yanlış doğru segura seguro fuerte débil "
    "sicher stark schwach sûr forte fort faible fraca sterk zwak silna słaba příliš "
    "stejné nové staré dlouhé krátké špatné mới cũ quá sai đúng baru lama terlalu salah "
    "benar ίδιος νέος παλιός πολύ λάθος σωστός".split()
)


def luhn(candidate: str) -> bool:
    digits = [int(c) for c in candidate if c.isdigit()]
    if not 13 <= len(digits) <= 19 or len(set(digits)) == 1:
        return False
    total = 0
    for i, d in enumerate(reversed(digits)):
        if i % 2:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


def _iban(candidate: str) -> bool:
    compact = candidate.replace(" ", "").upper()
    if not 15 <= len(compact) <= 34:
        return False
    rearranged = compact[4:] + compact[:4]
    number = "".join(str(int(c, 36)) for c in rearranged)
    return int(number) % 97 == 1


def _not_a_word(value: str) -> bool:
    # "is expired." is a word ending its sentence; a value's own "!" is kept (not compared).
    return value.strip("\"'`").rstrip(".!?…").casefold() not in _NOT_A_SECRET


_HAS_ALPHA = re.compile(r"[A-Za-z]")
# Three or more pieces split by -, _, / or +, each all letters or all digits: a slug,
# path or date, not a key.
_SLUG = re.compile(r"[-_/+]*+(?:(?:[A-Za-z]++|[0-9]++)(?:[-_/+]++|\Z)){3,}+\Z")
_ENTROPY_SAMPLE = 4096


def high_entropy(token: str) -> bool:
    """Digits and letters, not a slug, and at least 3.5 bits of entropy per character.

    ``token`` is a run of ASCII token characters. The entropy of a run longer than 4,096
    characters (a pasted blob) is that of 4,096 characters taken at even steps along it,
    so that check costs the same for any size; the others are scans in C.
    """
    if token.isdigit() or not any(d in token for d in "0123456789"):
        return False
    if not _HAS_ALPHA.search(token):
        return False
    sample = token[:: -(-len(token) // _ENTROPY_SAMPLE)]
    size = len(sample)
    entropy = -sum(n / size * math.log2(n / size) for n in Counter(sample).values())
    return entropy >= 3.5 and "://" not in token and not _SLUG.match(token)


@dataclass(frozen=True)
class Detector:
    """One pattern, compiled for ASCII text (faster) and for any text."""

    label: str
    ascii: re.Pattern[str]
    unicode: re.Pattern[str]
    group: str | int = 0
    check: Callable[[str], bool] | None = None
    folded: bool = False  # matched on the lower-cased text
    guard: Callable[[str, re.Match[str]], bool] | None = None
    """A last look at the whole match in the original text (its case kept): ``False``
    means it is no secret after all. Constant time, so the scan stays linear."""
    unicode_only: bool = False
    """Its literal is not ASCII: an ASCII text is not scanned for it."""


def _det(
    label: str,
    source: str | re.Pattern[str],
    *,
    group: str | int = 0,
    check: Callable[[str], bool] | None = None,
    folded: bool = False,
    guard: Callable[[str, re.Match[str]], bool] | None = None,
    literal: str = "",
) -> Detector:
    """``literal``: the text every match starts with, when it is not ASCII."""
    text = source if isinstance(source, str) else source.pattern
    compiled = re.compile(text, re.ASCII), re.compile(text)
    return Detector(
        label, *compiled, group=group, check=check, folded=folded, guard=guard,
        unicode_only=not literal.isascii(),
    )  # fmt: skip


def _word(literal: str) -> str:
    """``literal`` at the start of a word, the boundary checked after it."""
    escaped = re.escape(literal)
    return rf"{escaped}(?<!\w{escaped})"


# One word of the optional "for/to/of/on/at ..." clause: dots only inside it ("gmail.com")
# or ending a short title ("St."), so the clause never runs on past a full stop into the
# next sentence ("a pin on your purse. Is Spider-Man ...").
_CLAUSE_WORD = r"(?:(?:mrs|mr|ms|dr|st|jr|sr|vs)\.|[\w\-]++(?:\.[\w\-]++)*+)"
# "<keyword> [for|to|of|on|at <one or two words>] (is|was|=|:) <value>"
_PHRASE_TAIL = (
    rf"\b(?:\s++(?:for|to|of|on|at)\s++{_CLAUSE_WORD}(?:\s++{_CLAUSE_WORD})?)?"
    r"(?:\s++(?P<verb>is|was)|\s*+[:=])\s*+(?P<v>[\"'`]?[^\s\"'`,;]{3,}[\"'`]?)"
)


def _same_sentence(text: str, m: re.Match[str]) -> bool:
    """Whether the "is"/"was" of a phrase match belongs to its keyword: a capitalized
    "Is" after a keyword in lower case starts another sentence ("... a pin on your purse
    Is Spider-Man your favorite?"); "Pin Is 0000" and "PIN IS 0000" stay secrets."""
    start, end = m.span("verb")
    if start < 0:
        return True
    verb = text[start:end]
    return not (verb[0].isupper() and verb[1:].islower() and text[m.start()].islower())


# What a code opens: "<thing> code [is|:] <value>".
_CODE_OF = (
    "door", "front door", "back door", "alarm", "gate", "safe", "lock", "garage", "entry",
    "access", "security", "building", "locker", "wifi", "wi-fi", "keypad", "entrance",
    "lockbox", "vault", "house", "apartment", "office",
)  # fmt: skip
# After "<thing>": " code", an optional "for <words>" clause, an optional verb, the value.
_CODE_TAIL = (
    rf"[\s\-]?code\b(?:\s++(?:for|to|of|on|at)\s++{_CLAUSE_WORD}(?:\s++{_CLAUSE_WORD})?)?"
    r"(?:\s++(?P<verb>is|was)|\s*+[:=])?\s*+(?P<v>[\"'`]?[^\s\"'`,;]{3,}[\"'`]?)"
)
_OPENS = "|".join(re.escape(t) for t in _CODE_OF)
_FOR_OPENING = (
    rf"\s++(?:for|to|of)\s++(?:(?:the|my|our)\s++)?(?:{_OPENS})\b"
    r"(?:\s++(?P<verb>is|was)|\s*+[:=])\s*+(?P<v>[\"'`]?[^\s\"'`,;]{3,}[\"'`]?)"
)
# The start of a phrase's value: "<keyword> [for <words>] (is|was|=|:) ".
_PHRASE_START = (
    rf"\b(?:\s++(?:for|to|of|on|at)\s++{_CLAUSE_WORD}(?:\s++{_CLAUSE_WORD})?)?"
    r"(?:\s++(?P<verb>is|was)|\s*+[:=])\s*+"
)


def _looks_like_code(value: str) -> bool:
    """A code has a digit, or is a run of six or more characters that is not a plain word."""
    bare = value.strip("\"'`")
    if any(c.isdigit() for c in bare):
        return True
    return len(bare) >= 6 and not bare.isalpha()


# Words that make "passphrase is <words>" a description ("is stored safely in my vault",
# "is long, I never remember it") rather than the passphrase.
_TELLING = frozenset(
    "in on at to for with by from into under somewhere safely there here it i me my "
    "never too very and but because so".split()
)


def _passphrase(value: str) -> bool:
    """The words after "passphrase is": the passphrase itself, unless they start with an
    ordinary word ("stored", "long") and go on like a sentence about it."""
    words = [w.strip(",;:\"'`").casefold() for w in value.split()]
    if not words or not words[0]:
        return False
    if _not_a_word(words[0]):
        return True
    return len(words) >= 3 and _TELLING.isdisjoint(words[1:])


_PASSWORD_WORDS = (
    ("pass", r"(?:\s?word|wd|code|phrase)"),
    ("pw", "d?"),
    ("pin", r"(?:\s?code)?"),
    ("api", r"[\s_\-]?(?:key|token)"),
    ("access", r"[\s_\-]?token"),
    ("auth", r"[\s_\-]?token"),
    ("refresh", r"[\s_\-]?token"),
    ("bearer", r"[\s_\-]?token"),
    ("client", r"[\s_\-]?secret"),
    ("secret", r"[\s_\-]?key"),
)

# "Password" in other languages, each with the verbs that say what it is ("es", "ist"...);
# any of them also in the ``label: value`` form (a full-width colon too).
_PASSWORDS_ELSEWHERE = (
    (("contraseña", "contrasena"), "es|era"),
    (("mot de passe", "mdp"), "est|était|etait|c'est"),
    (("passwort", "kennwort"), "ist|lautet|war"),
    (("senha",), "é|era"),
    (("password",), "è|era"),  # Italian (the English "is/was" are above)
    (("wachtwoord",), "is|was"),
    (("hasło", "haslo"), "to|jest"),
    (("пароль",), "это|—|-"),
    (("lösenord", "losenord"), "är|ar|var"),
    (("passord", "adgangskode"), "er|var"),
    (("salasana",), "on|oli"),
    (("şifre", "sifre", "parola"), ""),  # Turkish: the colon form only
    (("heslo",), "je|bylo"),  # Czech, Slovak
    (("jelszó", "jelszo", "jelszavam"), ""),  # Hungarian
    (("mật khẩu", "mat khau"), "là|la"),  # Vietnamese
    (("kata sandi", "kata laluan"), "adalah|ialah"),  # Indonesian, Malay
    (("κωδικός", "κωδικος"), "είναι|ειναι"),  # Greek
    (("סיסמה", "הסיסמה"), "היא|הוא"),  # Hebrew
    (("كلمة المرور", "كلمة السر"), "هي"),  # Arabic
    (("पासवर्ड",), ""),  # Hindi (the value comes before its verb)
)
_ELSEWHERE_VALUE = r"\s*+(?P<v>[\"'`]?[^\s\"'`,;]{3,}[\"'`]?)"
# Chinese, Japanese, Korean and Thai: no spaces, the verb glued on; the value is the ASCII run
# after it ("我的密码是hunter2，..."), so that a description in the language is not one.
_PASSWORDS_CJK = (
    ("密码", "是|为|：|:|="), ("密碼", "是|為|：|:|="), ("口令", "是|为|：|:|="),
    ("パスワード", "は|が|：|:|="), ("暗証番号", "は|が|：|:|="),
    ("비밀번호", "는|은|：|:|="), ("패스워드", "는|은|：|:|="),
    ("รหัสผ่าน", "คือ|：|:|="),  # Thai
)  # fmt: skip
_CJK_VALUE = r"\s*+(?P<v>[!-~]{3,})"


# Up to three short words between the label and its verb or colon: whose it is or what it
# opens ("Mật khẩu của tôi là", "Le mot de passe de mon compte est", "Passwort für Gmail:").
_ELSEWHERE_GAP = r"(?:\s++[^\s:=：.,;!?]{1,10}+){0,3}?"


def _elsewhere(label: str, verbs: str) -> str:
    said = rf"\s++(?P<verb>{verbs})\s|" if verbs else ""
    return (
        _word(label)
        + r"\w{0,3}+"  # an ending ("şifrem": my password)
        + _ELSEWHERE_GAP
        + rf"(?:{said}\s*+[:=：])"
        + _ELSEWHERE_VALUE
    )


_CARD_CODE = r"\b\s*+(?:is\s++|[:#=]\s*+|no\.?\s*+|number\s*+)?(?P<v>\d{3,4})\b"
# What follows a card number and goes with it: its expiry, its security code
# ("4111 1111 1111 1111 exp 12/27 cvv 123"); redacted with the card.
CARD_DETAILS = re.compile(
    r"(?:[\s,;:.()\-]{0,4}(?:and\s+|with\s+)?(?:(?:exp(?:iry|ires|iration)?\.?(?:\s+date)?"
    r"|valid\s+(?:thru|through|until)|good\s+thru)\s*:?\s*\d{1,2}\s*[/\-]\s*\d{2,4}"
    r"|\d{1,2}/\d{2,4}(?![\d/])"
    r"|(?:cvv2?|cvc2?|csc|cid|security\s+code|card\s+code)\s*(?:is|:|#|no\.?|number)?\s*:?"
    r"\s*\d{3,4}(?!\d)))+",
    re.IGNORECASE,
)

DETECTORS: tuple[Detector, ...] = (
    _det(
        "private key",
        r"-----BEGIN [A-Z ]{0,40}PRIVATE KEY-----"
        r"(?:[^-]++|-(?!----END [A-Z ]{0,40}PRIVATE KEY-----))*+"
        r"(?:-----END [A-Z ]{0,40}PRIVATE KEY-----)?",
    ),
    *(_det("api key", _word(f"{p}-") + r"[A-Za-z0-9_\-]{16,}") for p in ("sk", "rk", "pk")),
    *(
        _det("api key", _word(f"{p}_") + r"(?:live|test)_[A-Za-z0-9]{10,}")
        for p in ("sk", "rk", "pk")
    ),
    _det("api key", _word("AIza") + r"[0-9A-Za-z_\-]{30,}"),
    *(_det("aws access key", _word(p) + r"[0-9A-Z]{16}\b") for p in ("AKIA", "ASIA")),
    _det("github token", _word("gh") + r"[pousr]_[A-Za-z0-9]{20,}"),
    _det("github token", _word("github_pat_") + r"[A-Za-z0-9_]{20,}"),
    _det("slack token", _word("xox") + r"[abposre]-[A-Za-z0-9\-]{10,}"),
    # Starts only where a run of its characters starts: "eyJ-eyJ-..." is one scan.
    _det(
        "jwt",
        r"eyJ(?<![A-Za-z0-9_\-]eyJ)[A-Za-z0-9_\-]{8,}+\.[A-Za-z0-9_\-]{8,}+\.[A-Za-z0-9_\-]{8,}",
    ),
    _det(
        "bearer token",
        _word("bearer") + r"\s++(?P<v>[A-Za-z0-9._~+/\-]{12,}=*)",
        group="v",
        folded=True,
    ),
    _det("url password", URL_PASSWORD, group="pw"),
    # A card's security code, said with its name: "cvv 123", "CVC: 4821".
    *(
        _det("card number", _word(lit) + _CARD_CODE, folded=True)
        for lit in ("cvv", "cvv2", "cvc", "cvc2", "csc", "card code", "card verification code")
    ),
    *(
        _det(
            "password",
            _word(lit) + rest + _PHRASE_TAIL,
            group="v",
            folded=True,
            check=_not_a_word,
            guard=_same_sentence,
        )
        for lit, rest in _PASSWORD_WORDS
    ),
    # "Door code is Kx9!mQ2z", "alarm code 4821": the code that opens something.
    *(
        _det(
            "password",
            _word(lit) + _CODE_TAIL,
            group="v",
            folded=True,
            check=_looks_like_code,
            guard=_same_sentence,
        )
        for lit in _CODE_OF
    ),
    # "The code for the front door is Kx9!mQ2z".
    _det(
        "password",
        _word("code") + _FOR_OPENING,
        group="v",
        folded=True,
        check=_looks_like_code,
        guard=_same_sentence,
    ),
    # "Uses the PIN 7391 for the bank": digits right after the word.
    _det(
        "password",
        _word("pin") + r"(?:\s?code|\s++number)?\s*+[:=#]?\s*+(?P<v>\d{4,8})(?![\d\-])",
        group="v",
        folded=True,
    ),
    # A passphrase is words: the rest of its sentence.
    _det(
        "password",
        _word("pass") + r"\s?phrase" + _PHRASE_START + r"(?P<v>[^.!?\n]{3,120})",
        group="v",
        folded=True,
        check=_passphrase,
        guard=_same_sentence,
    ),
    # Bare "secret"/"token"/"key" only in the unmistakable ``name: value`` form.
    *(
        _det("secret", _word(w) + r"\s*+[:=]\s*+(?P<v>[^\s\"'`,;]{6,})", group="v", folded=True)
        for w in ("secret", "token", "key")
    ),
    *(
        _det(
            "password",
            _elsewhere(label, verbs),
            group="v",
            folded=True,
            check=_not_a_word,
            literal=label,
        )
        for labels, verbs in _PASSWORDS_ELSEWHERE
        for label in labels
    ),
    *(
        _det(
            "password",
            re.escape(label) + rf"\s*+(?:{verbs})?" + _CJK_VALUE,
            group="v",
            literal=label,
        )
        for label, verbs in _PASSWORDS_CJK
    ),
)

# The digit family. One scan finds anchors, each the first digit of a run of digits,
# spaces and dashes long enough to be a card number or SSN, or the digits after two
# capitals that may start an IBAN; only there are the patterns below tried. For ASCII
# text the scan runs on a byte map of it (digits "0", space and dash "-", capitals "A",
# anything else "."), where its first character is a literal that ``re`` finds at once.
DIGIT_ANCHOR = re.compile(r"\d(?:[\d \-]{10,}+|(?<=(?<!\w)[A-Z]{2}\d)\d)")
DIGIT_MAP = bytes(
    ord("0") if 48 <= b <= 57 else ord("-") if b in b" -" else ord("A") if 65 <= b <= 90 else 46
    for b in range(256)
)
MAPPED_DIGIT_ANCHOR = re.compile(rb"0(?:[0\-]{10,}+|(?<=AA0)0)")
IBAN = _det(
    "iban",
    r"[A-Z](?<!\w[A-Z])[A-Z]\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,4})?\b",
    check=_iban,
)  # tried two characters before an anchor
CARD = _det("card number", r"\d(?<![\d\-]\d)(?:[ \-]?\d){12,18}(?![\d\-])", check=luhn)
SSN = _det("ssn", r"\d(?<![\d\-]\d)\d{2}-\d{2}-\d{4}(?![\d\-])")
