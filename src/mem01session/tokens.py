"""Token counting that works offline and says which tokenizer it used.

In order of preference: ``tiktoken`` when its encoding is already cached locally, the
``bpe-openai`` package (bundled vocabularies, exact ``o200k_base`` counts), and last a
conservative bound (UTF-8 bytes: a byte-level BPE token covers at least one byte, so it
can overcount but never undercount).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

from .logs import get_logger, notice_once

log = get_logger(__name__)

DEFAULT_ENCODING = "o200k_base"


@dataclass(frozen=True)
class TokenCounter:
    """Counts tokens with one named tokenizer."""

    name: str
    _count: Callable[[str], int]

    def count(self, text: str) -> int:
        return self._count(text) if text else 0

    def __repr__(self) -> str:
        return f"TokenCounter({self.name!r})"


def _tiktoken(encoding: str) -> TokenCounter | None:
    try:
        import tiktoken

        enc = tiktoken.get_encoding(encoding)
        enc.encode("probe")
    except Exception:
        return None
    return TokenCounter(f"tiktoken:{encoding}", lambda t: len(enc.encode(t, disallowed_special=())))


def _bpe_openai(encoding: str) -> TokenCounter | None:
    try:
        import bpe_openai

        enc = bpe_openai.get_encoding(encoding)
        enc.encode("probe")
    except Exception:
        return None
    # Ordinary text: a special token's spelling ("<|endoftext|>") in a message is counted
    # as the text it is, not refused (and this path is the faster one).
    return TokenCounter(f"bpe-openai:{encoding}", lambda t: len(enc.encode_ordinary(t)))


def byte_bound_counter() -> TokenCounter:
    """Never undercounts a byte-level BPE: one token per UTF-8 byte."""
    return TokenCounter("utf8-bytes-upper-bound", lambda t: len(t.encode("utf-8")))


@lru_cache(maxsize=4)
def default_token_counter(encoding: str = DEFAULT_ENCODING) -> TokenCounter:
    """The best offline tokenizer available for ``encoding``."""
    counter = _tiktoken(encoding) or _bpe_openai(encoding)
    if counter is None:
        notice_once(
            log,
            f"tokenizer:{encoding}",
            logging.WARNING,
            "no BPE tokenizer available for %s; counting UTF-8 bytes (overcounts)",
            encoding,
        )
        counter = byte_bound_counter()
    return counter
