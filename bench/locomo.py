"""LoCoMo-format data: observation facts become beliefs, QAs of categories 1-4 queries.

Accepts a file holding one conversation (a dict) or a list of them, with the sessions
either at the top level or under ``"conversation"``, and the observations either as
``session_N_observation`` keys or under ``"observation"``. Pure and stdlib-only.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .metrics import Query, parse_ids

CATEGORIES = (1, 2, 3, 4)
_OBS = re.compile(r"^session_(\d+)_observation$")


@dataclass(frozen=True)
class Fact:
    text: str
    dia_ids: frozenset[str]
    session: int
    observed_at: datetime | None


@dataclass(frozen=True)
class Conversation:
    user_id: str
    facts: list[Fact]
    queries: list[tuple[Query, str]]  # (query, question text)


def parse_date(raw: object) -> datetime | None:
    """LoCoMo session dates: ``"1:56 pm on 8 May, 2023"``."""
    if not isinstance(raw, str):
        return None
    for fmt in ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y"):
        try:
            return datetime.strptime(raw.strip(), fmt).replace(tzinfo=UTC)
        except ValueError:
            continue
    return None


def _facts(sample: dict[str, Any]) -> list[Fact]:
    convo = sample.get("conversation", sample)
    observed: dict[str, Any] = dict(sample.get("observation") or {})
    observed.update({k: v for k, v in sample.items() if _OBS.match(k)})
    out: list[Fact] = []
    for key in sorted(observed, key=lambda k: int(m.group(1)) if (m := _OBS.match(k)) else 0):
        match = _OBS.match(key)
        if not match:
            continue
        n = int(match.group(1))
        when = parse_date(convo.get(f"session_{n}_date_time"))
        by_speaker = observed[key] or {}
        for entries in by_speaker.values():
            for entry in entries:
                if not entry or not isinstance(entry[0], str) or not entry[0].strip():
                    continue
                ids = parse_ids(entry[1:] if len(entry) > 1 else ())
                out.append(Fact(entry[0].strip(), ids, n, when))
    return out


def _queries(sample: dict[str, Any], user_id: str) -> list[tuple[Query, str]]:
    out: list[tuple[Query, str]] = []
    for index, qa in enumerate(sample.get("qa") or []):
        category = qa.get("category")
        if category not in CATEGORIES or not qa.get("question"):
            continue
        query = Query(f"{user_id}#{index}", parse_ids(qa.get("evidence")), int(category))
        out.append((query, str(qa["question"])))
    return out


def load(folder: Path) -> list[Conversation]:
    """Every conversation of every ``*.json`` file in ``folder`` (sorted by name)."""
    conversations: list[Conversation] = []
    for path in sorted(Path(folder).glob("*.json")):
        data = json.loads(path.read_text())
        samples = data if isinstance(data, list) else [data]
        for index, sample in enumerate(samples):
            name = sample.get("sample_id") or (
                path.stem if len(samples) == 1 else f"{path.stem}-{index}"
            )
            user_id = f"locomo-{name}"
            conversations.append(Conversation(user_id, _facts(sample), _queries(sample, user_id)))
    return conversations
