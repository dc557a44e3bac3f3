"""The labelled LoCoMo fixture: its turns, and the beliefs the rule extractor stores from them.

The turns are built the way the end-to-end protocol feeds a conversation to the pipeline:
each speaker is a user; each of that speaker's turns is a user message, and the other
speaker's next turn in the same session (if any) the assistant's reply; an image turn's
text is ``f"{text} [image: {blip_caption}]"``.

Rebuild after a change to the rule extractor (labels of beliefs still stored are kept;
new ones come out unlabelled, and the fixture test fails until a person labels them)::

    python -m tests.extraction.locomo_fixture /path/to/locomo/conv-26.json
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mem01session.extraction import RuleExtractor, Turn, TurnMessage

FIXTURE = Path(__file__).parent / "fixtures" / "locomo_conv26.json"
NOW = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)  # session 1 of conversation 26
STORED = ("ADD", "SUPERSEDE", "UPDATE")
UNLABELLED = "UNLABELLED: read the turn and decide"


def said(turn: dict[str, Any]) -> str:
    """A LoCoMo turn's text as the pipeline receives it."""
    caption = turn.get("blip_caption")
    return f"{turn['text']} [image: {caption}]" if caption else str(turn["text"])


def turns_of(conversation: dict[str, Any]) -> list[dict[str, Any]]:
    """Every turn of a LoCoMo conversation, in order, with the reply it got."""
    names = [k for k in conversation if re.fullmatch(r"session_\d+", k)]
    out: list[dict[str, Any]] = []
    for name in sorted(names, key=lambda k: int(k.split("_")[1])):
        session = conversation[name]
        for i, turn in enumerate(session):
            after = session[i + 1] if i + 1 < len(session) else None
            reply = said(after) if after and after["speaker"] != turn["speaker"] else None
            out.append(
                {
                    "dia_id": turn["dia_id"],
                    "speaker": turn["speaker"],
                    "text": said(turn),
                    "reply": reply,
                }
            )
    return out


async def beliefs_of(turns: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The beliefs the rule extractor stores from each turn on its own (no candidates)."""
    extractor = RuleExtractor()
    out: list[dict[str, Any]] = []
    for t in turns:
        messages = [TurnMessage("user", t["text"])]
        if t["reply"] is not None:
            messages.append(TurnMessage("assistant", t["reply"]))
        turn = Turn(f"locomo-{t['speaker']}", tuple(messages), NOW)
        extraction = await extractor.extract(turn, (), NOW)
        for op in extraction.ops:
            if op.op in STORED:
                out.append(
                    {
                        "dia_id": t["dia_id"],
                        "speaker": t["speaker"],
                        "op": op.op,
                        "key": op.key,
                        "content": op.content,
                    }
                )
    return out


def _identity(belief: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(belief[k] for k in ("dia_id", "op", "key", "content"))


def build(source: Path) -> dict[str, Any]:
    conversation = json.loads(source.read_text(encoding="utf-8"))
    turns = turns_of(conversation)
    old = json.loads(FIXTURE.read_text(encoding="utf-8")) if FIXTURE.exists() else {}
    labels = {_identity(b): (b["right"], b["why"]) for b in old.get("beliefs", [])}
    beliefs = []
    for belief in asyncio.run(beliefs_of(turns)):
        right, why = labels.get(_identity(belief), (None, UNLABELLED))
        beliefs.append({**belief, "right": right, "why": why})
    return {
        "source": "LoCoMo (snap-research/locomo, CC BY-NC 4.0), conversation 26; testing only",
        "speakers": [conversation["speaker_a"], conversation["speaker_b"]],
        "turns": turns,
        "beliefs": beliefs,
    }


def main(argv: Sequence[str]) -> int:
    if len(argv) != 1:
        print(__doc__)
        return 2
    fixture = build(Path(argv[0]))
    FIXTURE.parent.mkdir(exist_ok=True)
    text = json.dumps(fixture, indent=1, ensure_ascii=False)
    FIXTURE.write_text(text + "\n", encoding="utf-8")
    unlabelled = sum(1 for b in fixture["beliefs"] if b["right"] is None)
    print(
        f"{len(fixture['turns'])} turns, {len(fixture['beliefs'])} beliefs, {unlabelled} unlabelled"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
