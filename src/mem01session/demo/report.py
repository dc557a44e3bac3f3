"""The demo's evidence: what each strategy showed the model, and pass/fail checks."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

from agents.items import TResponseInputItem

from ..engine import BeliefEngine
from ..engine.records import Belief, RecallResult
from ..engine.render import OPEN
from ..tokens import TokenCounter


@dataclass
class Transcript:
    """One day's conversation as it was stored."""

    day: str
    session_id: str
    turns: list[tuple[str, str]] = field(default_factory=list)
    items: list[TResponseInputItem] = field(default_factory=list)


@dataclass(frozen=True)
class Strategy:
    """One way of preparing Friday's model input."""

    name: str
    items: int
    tokens: int
    answer: str
    input_preview: list[str]

    @classmethod
    def of(cls, name: str, items: list[Any], answer: str, counter: TokenCounter) -> Strategy:
        text = json.dumps(items, ensure_ascii=False, default=str)
        preview = [_preview(i) for i in items]
        return cls(name, len(items), counter.count(text), answer, preview)


def _preview(item: Any) -> str:
    if not isinstance(item, dict):
        return str(item)[:80]
    role = item.get("role") or item.get("type", "?")
    content = item.get("content")
    if isinstance(content, list):
        content = " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    text = " ".join(str(content or "").split())
    return f"{role}: {text[:100]}{'…' if len(text) > 100 else ''}"


@dataclass(frozen=True)
class Check:
    """One piece of evidence, passed or failed, with what was observed."""

    name: str
    passed: bool
    detail: str


@dataclass
class DemoReport:
    """Everything the demo observed."""

    user_id: str
    question: str
    strategies: list[Strategy]
    checks: list[Check]
    recalled: list[dict[str, Any]]
    ledger: list[dict[str, Any]]
    transcripts: dict[str, list[str]]
    block: str
    block_tokens: int
    block_budget: int
    offline: dict[str, str]
    days: dict[str, str]
    seconds: float = 0.0
    kept: bool = False
    day_turns: dict[str, list[tuple[str, str]]] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.checks)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["passed"] = self.passed
        return data


def _belief_json(belief: Belief, days: dict[str, str]) -> dict[str, Any]:
    def day_of(moment: Any) -> str:
        iso = moment.date().isoformat()
        return next((d for d, t in days.items() if t.startswith(iso)), iso)

    return {
        "id": belief.id,
        "content": belief.content,
        "status": belief.status,
        "valid_from": belief.valid_from.isoformat(),
        "valid_to": belief.valid_to.isoformat() if belief.valid_to else None,
        "superseded_by": belief.superseded_by,
        "sources": [
            {
                "conversation": s.session_id,
                "day": day_of(s.observed_at),
                "turn": s.item_ref,
                "evidence": s.evidence,
            }
            for s in belief.sources
        ],
    }


def _interval(belief: Belief | None) -> str:
    if belief is None:
        return "missing"
    until = belief.valid_to.date().isoformat() if belief.valid_to else "now"
    return f"valid {belief.valid_from.date().isoformat()} to {until}"


def _block_day(iso: str) -> str:
    """A day as the block's quote headers write it (``23 Nov 2026``)."""
    moment = datetime.fromisoformat(iso)
    return f"{moment.day} {moment:%b %Y}"


def _lines_with(block: str, text: str) -> list[tuple[str | None, str]]:
    """The block's lines holding ``text``, each with the date header it is under (a
    quote) or None (a note)."""
    found: list[tuple[str | None, str]] = []
    day: str | None = None
    for line in block.splitlines():
        stripped = line.strip()
        if stripped.endswith(":") and stripped[:1].isdigit():
            day = stripped.rstrip(":")
        elif text in stripped:
            found.append((day if stripped.startswith('- "') else None, stripped))
    return found


async def collect_evidence(
    *,
    engine: BeliefEngine,
    user_id: str,
    question: str,
    transcripts: list[Transcript],
    strategies: list[Strategy],
    recall: RecallResult | None,
    offline: dict[str, str],
    days: dict[str, str],
) -> DemoReport:
    """Read back what the database and transcripts hold, and judge it."""
    history = await engine.history(user_id)
    ledger = await engine.ledger(user_id)
    # Provenance from history: the block (and so the recall) shows none by default.
    with_sources = {b.id: b for b in history}
    recalled = [
        _belief_json(with_sources.get(sb.belief.id, sb.belief), days)
        for sb in (recall.beliefs if recall else ())
    ]
    checks: list[Check] = []

    friday = next(t for t in transcripts if t.day == "Friday")
    friday_users = [i.get("content") for i in friday.items if i.get("role") == "user"]
    checks.append(
        Check(
            "Friday's transcript holds only Friday's items",
            friday_users == [question] and len(friday.items) == 2,
            f"{len(friday.items)} items; user messages: {friday_users}",
        )
    )
    leaked = [t.day for t in transcripts if OPEN in json.dumps(t.items, default=str)]
    checks.append(
        Check(
            "no memory block in any transcript",
            not leaked,
            f"transcripts with a block: {leaked or 'none'}",
        )
    )

    def recalled_like(word: str, status: str = "active") -> dict[str, Any] | None:
        return next((r for r in recalled if word in r["content"] and r["status"] == status), None)

    sf = recalled_like("San Francisco")
    checks.append(
        Check(
            "recalled San Francisco (active) with provenance",
            bool(sf and sf["sources"] and sf["sources"][0]["evidence"]),
            json.dumps(sf["sources"][0]) if sf and sf["sources"] else "not recalled",
        )
    )
    nyc = next((b for b in history if "New York" in b.content), None)
    sf_belief = next((b for b in history if "San Francisco" in b.content), None)
    rent_belief = next((b for b in history if "2,400" in b.content), None)
    superseded = bool(
        nyc
        and sf_belief
        and nyc.status == "superseded"
        and nyc.superseded_by == sf_belief.id
        and nyc.valid_to is not None
        and any(e.op == "SUPERSEDE" and e.belief_id == sf_belief.id for e in ledger)
    )
    checks.append(
        Check(
            "ledger: New York superseded by San Francisco, New York's text kept",
            superseded,
            f"New York: {nyc.status if nyc else 'missing'} "
            f"{repr(nyc.content) if nyc else ''} -> #{nyc.superseded_by if nyc else '?'}",
        )
    )
    monday, wednesday = (datetime.fromisoformat(days[d]).date() for d in ("Monday", "Wednesday"))
    timeline = bool(
        nyc
        and sf_belief
        and nyc.valid_to is not None
        and nyc.valid_from.date() == monday
        and nyc.valid_to == sf_belief.valid_from
        and monday <= sf_belief.valid_from.date() <= wednesday
    )
    checks.append(
        Check(
            "dates: New York from Monday until the move, San Francisco from the move on",
            timeline,
            f"New York {_interval(nyc)}; San Francisco {_interval(sf_belief)}",
        )
    )
    rent_retired = bool(
        rent_belief
        and nyc
        and rent_belief.status != "active"
        and rent_belief.valid_to is not None
        and rent_belief.valid_to == nyc.valid_to
    )
    reason = next(
        (e.reason for e in ledger if rent_belief and e.belief_id == rent_belief.id and e.reason),
        None,
    )
    checks.append(
        Check(
            "the New York rent: retired at the move, not current beside San Francisco",
            rent_retired,
            f"{rent_belief.content!r} {rent_belief.status} {_interval(rent_belief)}"
            + (f" ({reason})" if reason else "")
            if rent_belief
            else "no rent belief",
        )
    )
    rent_lines = _lines_with(recall.text if recall else "", "2,400")
    checks.append(
        Check(
            "Friday's block still carries the rent: Monday's words, with their date",
            any(day == _block_day(days["Monday"]) for day, _ in rent_lines),
            "; ".join(f"{line} (under {day or 'the notes'})" for day, line in rent_lines)
            or "not in the block",
        )
    )
    budget = recall.max_tokens if recall else 0
    tokens = recall.tokens if recall else 0
    checks.append(
        Check(
            "the memory block fit its token budget",
            recall is not None and 0 < tokens <= budget,
            f"{tokens} of {budget} tokens ({recall.tokenizer if recall else '-'})",
        )
    )
    return DemoReport(
        user_id=user_id,
        question=question,
        strategies=strategies,
        checks=checks,
        recalled=recalled,
        ledger=[
            {
                "op": e.op,
                "belief_id": e.belief_id,
                "related": list(e.related_ids),
                "before": e.before,
                "after": e.after,
                "at": e.created_at.isoformat(),
            }
            for e in ledger
        ],
        transcripts={t.day: [_preview(i) for i in t.items] for t in transcripts},
        block=recall.text if recall else "",
        block_tokens=tokens,
        block_budget=budget,
        offline=offline,
        days=days,
        day_turns={t.day: t.turns for t in transcripts},
    )
