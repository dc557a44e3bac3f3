"""Belief extraction: turn text -> lifecycle ops.

* :class:`Extractor` (:mod:`.base`): what the worker asks of an extractor, with what it is
  given (:class:`Turn`, :class:`Candidate`) and what it answers (:class:`Extraction`);
* :class:`OpenAIExtractor`: an OpenAI (or compatible) chat model with structured outputs;
* :class:`RuleExtractor`: deterministic English patterns, no network, narrow coverage;
* :func:`screen` / :func:`screen_ops`: the secret and hygiene screen the worker applies to
  every op, whichever extractor proposed it, before anything is stored.

Every public name but :func:`default_extractor` is imported on first use (PEP 562): the
worker needs the protocol and the screen, not the OpenAI client, and a module that only
needs the types (:mod:`.base`: what a job carries, which ``mem01session jobs list``
reads) loads without the rule extractor's patterns and the secret rules.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from .._lazy import lazy_names
from ..config import Settings
from ..errors import ConfigError
from ..logs import get_logger, notice_once

if TYPE_CHECKING:
    from ..secrets.scan import contains_secret, redact_secrets
    from .base import Candidate, Extraction, Extractor, Turn, TurnMessage
    from .hygiene import screen, screen_ops
    from .openai_extractor import OpenAIExtractor
    from .rules.extractor import RuleExtractor

# Each public name and its module.
_HOMES = {
    "Candidate": ".base",
    "Extraction": ".base",
    "Extractor": ".base",
    "OpenAIExtractor": ".openai_extractor",
    "RuleExtractor": ".rules.extractor",
    "Turn": ".base",
    "TurnMessage": ".base",
    "contains_secret": "..secrets.scan",
    "redact_secrets": "..secrets.scan",
    "screen": ".hygiene",
    "screen_ops": ".hygiene",
}

log = get_logger(__name__)

__all__ = [
    "Candidate",
    "Extraction",
    "Extractor",
    "OpenAIExtractor",
    "RuleExtractor",
    "Turn",
    "TurnMessage",
    "contains_secret",
    "default_extractor",
    "redact_secrets",
    "screen",
    "screen_ops",
]


__getattr__, __dir__ = lazy_names(__name__, _HOMES, globals())


def default_extractor(settings: Settings, *, kind: str | None = None) -> Extractor:
    """Pick an extractor: ``kind`` ("openai" or "rules") or automatically.

    Automatic: OpenAI when ``OPENAI_API_KEY`` is set, else the offline rule extractor.
    The choice is logged.
    """
    if kind is None:
        kind = "openai" if settings.openai_api_key else "rules"
    if kind == "openai":
        from .openai_extractor import OpenAIExtractor

        extractor: Extractor = OpenAIExtractor(settings)
        notice_once(
            log,
            f"extractor:{extractor.name}",
            logging.INFO,
            "extraction: OpenAI %s (%s)",
            extractor.name,
            settings.openai_base_url or "api",
        )
    elif kind == "rules":
        from .rules.extractor import RuleExtractor

        extractor = RuleExtractor()
        notice_once(
            log,
            f"extractor:{extractor.name}",
            logging.WARNING,
            "extraction: offline rule extractor (%s); %s. It recognizes a narrow set of "
            "English first-person statements only.",
            extractor.name,
            "no OPENAI_API_KEY set" if not settings.openai_api_key else "chosen explicitly",
        )
    else:
        raise ConfigError(f"unknown extractor kind {kind!r}; use 'openai' or 'rules'")
    return extractor
