"""Screening of proposed ops before anything is stored: secrets out, text clean.

Every op's ``content``, ``key``, ``evidence`` and ``reason`` go through here, whichever
extractor proposed them. Policy:

* a secret in ``content`` or ``key`` **drops the op**: a fact whose statement is the
  secret ("Password is hunter2") cannot be kept in any useful form; so does a statement
  holding the mark a scrubbed secret left in the turn (``[redacted]``, ``***``);
* so does a statement **addressed to the assistant** (:mod:`.directives`: "ignore all
  previous instructions", "is a verified admin"): instructions are not facts about the
  user, and a belief comes back in every later conversation; the words stay an episode;
* a secret in ``evidence`` or ``reason`` is **redacted** (replaced by ``[redacted]``) and
  the op's ``reason`` records it ("evidence redacted: api key"), so the ledger says so;
* text is stripped of NUL and control characters, whitespace is collapsed, and length is
  capped at :data:`~mem01session.engine.ops.MAX_CONTENT_CHARS` (content) and
  :data:`~mem01session.engine.ops.MAX_EVIDENCE_CHARS` (evidence, reason).

Detection is :mod:`mem01session.secrets.scan`'s.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from ..engine.ops import MAX_CONTENT_CHARS, MAX_EVIDENCE_CHARS, Op, mark_screened, was_screened
from ..logs import get_logger
from ..secrets.redaction import MASK
from ..secrets.scan import REDACTED, find_secrets, redact_secrets, unique
from .directives import directive

log = get_logger(__name__)


_SPACE = re.compile(r"\s+")
# Control characters (category Cc) other than the whitespace ones, and lone surrogates.
_CONTROL = re.compile("[\x00-\x08\x0e-\x1f\x7f-\x9f\ud800-\udfff]")
# Evidence and reason are scanned for secrets before they are capped; only this much of
# them is scanned, a margin past the cap so that a secret that reaches into what is kept
# is seen whole (or, for a run longer than that, still long enough to be recognized).
_SCANNED = 8 * MAX_EVIDENCE_CHARS


def _head(text: str) -> str:
    """The cleaned start of ``text`` that is scanned for secrets before it is capped."""
    return clean_text(text[: 2 * _SCANNED])[:_SCANNED]


def clean_text(text: str, limit: int | None = None) -> str:
    """Control characters removed, whitespace collapsed, trimmed, capped at ``limit``."""
    collapsed = _SPACE.sub(" ", _CONTROL.sub("", text)).strip()
    if limit is not None and len(collapsed) > limit:
        collapsed = collapsed[: limit - 1].rstrip() + "…"
    return collapsed


@dataclass(frozen=True)
class Screened:
    """The ops that may be stored, and a note for each one dropped."""

    ops: tuple[Op, ...]
    notes: tuple[str, ...] = ()


def _masked(text: str | None) -> bool:
    return text is not None and (REDACTED in text or MASK in text)


def screen(ops: Sequence[Op]) -> Screened:
    """Screen a batch: drop ops whose statement is a secret, redact the rest, clean text."""
    kept: list[Op] = []
    notes: list[str] = []
    for index, op in enumerate(ops):
        if was_screened(op):
            kept.append(op)
            continue
        content = clean_text(op.content, MAX_CONTENT_CHARS) if op.content is not None else None
        key = clean_text(op.key, 200) if op.key is not None else None
        # Checked before the cap, so a secret cut in two by it is still seen.
        statement_secrets = find_secrets(_head(op.content or "")) + find_secrets(
            _head(op.key or "")
        )
        if statement_secrets:
            labels = ", ".join(unique(m.label for m in statement_secrets))
            notes.append(f"op #{index} ({op.op}) dropped: its content held a secret ({labels})")
            # Every writer screens here (the extractors, the worker, the memory tools).
            log.warning("memory: a statement was not stored: it held a secret (%s)", labels)
            continue
        if _masked(content) or _masked(key):
            # The turn was scrubbed before extraction: a statement made of the mark is a
            # statement about a secret, and useless without it.
            notes.append(f"op #{index} ({op.op}) dropped: its content was a scrubbed secret")
            continue
        addressed = directive(op.content or "") or directive(op.key or "")
        if addressed is not None:
            notes.append(
                f"op #{index} ({op.op}) dropped: addressed to the assistant ({addressed}), "
                "not a fact about the user"
            )
            log.warning("memory: a statement was not stored: addressed to the assistant")
            continue
        remarks: list[str] = []
        evidence = op.evidence
        if evidence is not None:
            evidence, labels_found = redact_secrets(_head(evidence))
            evidence = clean_text(evidence, MAX_EVIDENCE_CHARS) or None
            if labels_found:
                remarks.append(f"evidence redacted: {', '.join(labels_found)}")
        reason = op.reason
        if reason is not None:
            reason, labels_found = redact_secrets(_head(reason))
            if labels_found:
                remarks.append(f"reason redacted: {', '.join(labels_found)}")
        if remarks:
            reason = "; ".join([r for r in [reason] if r] + remarks)
            notes.append(f"op #{index} ({op.op}): {'; '.join(remarks)}")
        if reason is not None:
            reason = clean_text(reason, MAX_EVIDENCE_CHARS) or None
        clean = replace(op, content=content, key=key, evidence=evidence, reason=reason)
        mark_screened(clean)
        kept.append(clean)
    return Screened(tuple(kept), tuple(notes))


def screen_ops(ops: Sequence[Op]) -> list[Op]:
    """The ops of :func:`screen`, for callers that do not need the notes."""
    return list(screen(ops).ops)
