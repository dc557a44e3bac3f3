"""The fake server's "model": deterministic, small, and plausible for the two prompts it sees.

* An extraction request (its user message lists "Candidate beliefs (active):" and a
  "Turn (observed ...)"): ops for "I live in X" / "I moved to X" (home.city, superseding
  the candidate when the city changed) and "$N a month in rent" / "rent is $N" (home.rent);
  a move with no rent said invalidates the rent candidate, as the prompt asks.
* Anything else is a chat turn: the answer quotes the active records of the memory block
  it finds in the rendered prompt ("I don't know." without one), as a model shown the
  block would.
"""

from __future__ import annotations

import json
import re
from typing import Any

from mem01session.engine.parse import parse_block
from mem01session.engine.render import CLOSE, OPEN

_CANDIDATE = re.compile(r"^(b\d+): (.*?)(?: \[([\w.]+)\])?(?: \(since [\d-]+\))?$")
_CITY = re.compile(r"\bI (?:live|moved) (?:in|to) ((?:[A-Z][a-z]+ ?)+)")
_RENT = re.compile(r"\$([\d,]+) a month in rent|\brent is \$([\d,]+)")
_FIELDS = ("target", "content", "key", "confidence", "evidence", "reason", "valid_from")


def is_extraction(messages: list[dict[str, Any]]) -> bool:
    return any("Candidate beliefs (active):" in text_of(m) for m in messages)


def text_of(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    parts = content or []
    return "\n".join(p.get("text", "") for p in parts if isinstance(p, dict))


def extraction_ops(request: str) -> dict[str, Any]:
    """The ops a careful model would propose for the extraction request ``request``."""
    candidates: dict[str, tuple[str, str]] = {}  # key -> (alias, content)
    said: list[str] = []
    section = ""
    for line in request.splitlines():
        if line.startswith(("Candidate beliefs", "Turn (observed")):
            section = line
            continue
        match = _CANDIDATE.match(line)
        if section.startswith("Candidate") and match and match[3]:
            candidates[match[3]] = (match[1], match[2])
        elif section.startswith("Turn") and line.startswith("user: "):
            said.append(line.removeprefix("user: "))
    ops: list[dict[str, Any]] = []
    for text in said:
        moved = []
        if city := _CITY.search(text):
            moved = _fact("home.city", f"Lives in {city[1].strip()}", text, candidates)
            ops += moved
        if rent := _RENT.search(text):
            amount = rent[1] or rent[2]
            ops += _fact("home.rent", f"Pays ${amount} a month in rent", text, candidates)
        elif any(op["op"] == "SUPERSEDE" for op in moved) and "home.rent" in candidates:
            ops.append(
                dict.fromkeys(_FIELDS)
                | {"targets": [], "op": "INVALIDATE", "target": candidates["home.rent"][0]}
                | {"reason": "moved: the rent was for the home left", "evidence": text}
            )
    return {"ops": ops}


def _fact(
    key: str, content: str, evidence: str, candidates: dict[str, tuple[str, str]]
) -> list[dict[str, Any]]:
    op: dict[str, Any] = dict.fromkeys(_FIELDS) | {"targets": []}
    op |= {"key": key, "content": content, "evidence": evidence, "confidence": 0.9}
    current = candidates.get(key)
    if current is None:
        return [op | {"op": "ADD"}]
    if current[1] == content:
        return []
    return [op | {"op": "SUPERSEDE", "target": current[0], "reason": "changed"}]


def chat_answer(prompt: str) -> str:
    """What a model shown ``prompt`` says: the active records of its memory block."""
    if OPEN not in prompt:
        return "I don't know."
    block = prompt[prompt.index(OPEN) :].split(CLOSE)[0] + CLOSE
    facts = [r.content for r in parse_block(block) if r.status == "active"]
    return "From what I remember: " + "; ".join(facts) + "." if facts else "I don't know."


def reply(messages: list[dict[str, Any]], prompt: str, response_format: str | None) -> str:
    """The model's text for a request with ``messages`` rendered as ``prompt``."""
    if not is_extraction(messages):
        return chat_answer(prompt)
    request = next(text_of(m) for m in messages if "Candidate beliefs" in text_of(m))
    answer = json.dumps(extraction_ops(request))
    if response_format is None:  # nothing constrains a small model: it chats around it
        return f"Sure! Here is the JSON you asked for:\n```json\n{answer}\n```\nAnything else?"
    return answer
