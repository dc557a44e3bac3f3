"""The extraction model's answer: its JSON schema, a tolerant reading, strict validation.

Small local models wrap JSON in prose or code fences when nothing constrains them;
:func:`read_json` finds the object anyway. What the object says is then validated
strictly (:func:`parse_ops`): any violation raises :class:`ExtractionError` and nothing is
applied.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from ..engine.ops import OP_KINDS, Op
from ..errors import ExtractionError

_NULLABLE_STRING: dict[str, Any] = {"type": ["string", "null"]}
OP_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["ops"],
    "properties": {
        "ops": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": [
                    "op",
                    "target",
                    "targets",
                    "content",
                    "key",
                    "confidence",
                    "evidence",
                    "reason",
                    "valid_from",
                ],
                "properties": {
                    "op": {"type": "string", "enum": list(OP_KINDS)},
                    "target": {**_NULLABLE_STRING, "description": "candidate alias, e.g. b1"},
                    "targets": {"type": "array", "items": {"type": "string"}},
                    "content": _NULLABLE_STRING,
                    "key": _NULLABLE_STRING,
                    "confidence": {"type": ["number", "null"]},
                    "evidence": _NULLABLE_STRING,
                    "reason": _NULLABLE_STRING,
                    "valid_from": {**_NULLABLE_STRING, "description": "ISO 8601 date"},
                },
            },
        }
    },
}
_FIELDS = frozenset(OP_SCHEMA["properties"]["ops"]["items"]["properties"])
_FENCE = re.compile(r"^\s*```(?:json)?\s*|\s*```\s*$")
_DECODER = json.JSONDecoder()


def read_json(text: str) -> Any:
    """The JSON value of ``text``: the whole text (code fences allowed), else the first
    JSON object embedded in it ("Here you go: {...}"); ExtractionError if there is none."""
    try:
        return json.loads(_FENCE.sub("", text))
    except json.JSONDecodeError as exc:
        error = exc
    for start in (i for i, ch in enumerate(text) if ch == "{"):
        try:
            value, _ = _DECODER.raw_decode(text, start)
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            return value
    raise ExtractionError(f"the model's answer is not valid JSON ({error.msg})") from None


def parse_ops(text: str, aliases: set[str], now: datetime) -> list[Op]:
    """Validate the model's JSON answer and build ops; any violation raises ExtractionError."""
    data = read_json(text)
    if not isinstance(data, dict) or set(data) != {"ops"} or not isinstance(data["ops"], list):
        raise ExtractionError('the model\'s answer must be an object {"ops": [...]}')
    return [_op(i, raw, aliases, now) for i, raw in enumerate(data["ops"])]


def _op(index: int, raw: object, aliases: set[str], now: datetime) -> Op:
    def fail(why: str) -> ExtractionError:
        kind = raw.get("op") if isinstance(raw, dict) else None
        return ExtractionError(f"the model's op #{index} ({kind}) is invalid: {why}")

    if not isinstance(raw, dict):
        raise fail("not an object")
    extra = set(raw) - _FIELDS
    if extra:
        raise fail(f"unknown fields {sorted(extra)}")
    kind = raw.get("op")
    if kind not in OP_KINDS:
        raise fail(f"unknown op kind {kind!r}; expected one of {', '.join(OP_KINDS)}")
    text = {f: _string(raw, f, fail) for f in ("target", "content", "key", "evidence", "reason")}
    targets = raw.get("targets") or []
    if not isinstance(targets, list) or not all(isinstance(t, str) for t in targets):
        raise fail("targets must be a list of aliases")
    confidence = raw.get("confidence")
    if confidence is not None and (
        isinstance(confidence, bool)
        or not isinstance(confidence, int | float)
        or not 0 <= confidence <= 1
    ):
        raise fail("confidence must be a number between 0 and 1")
    for alias in [text["target"], *targets]:
        if alias is not None and alias not in aliases:
            raise fail(f"unknown candidate alias {alias!r}")
    needs = _REQUIRED[kind]
    if "target" in needs and not text["target"]:
        raise fail("needs a target alias")
    if "content" in needs and not (text["content"] or "").strip():
        raise fail("needs content")
    if kind == "MERGE" and len(set(targets)) < 2:
        raise fail("MERGE needs two or more distinct targets")
    if kind == "UPDATE" and text["content"] is None and confidence is None:
        raise fail("UPDATE needs content or confidence")
    return Op(
        kind,
        content=text["content"],
        target=text["target"],
        targets=tuple(targets),
        key=text["key"],
        confidence=float(confidence) if confidence is not None else None,
        evidence=text["evidence"],
        reason=text["reason"] or ("no longer true" if kind == "INVALIDATE" else None),
        valid_from=_date(raw.get("valid_from"), now, fail),
    )


_REQUIRED: Mapping[str, frozenset[str]] = {
    "ADD": frozenset({"content"}),
    "UPDATE": frozenset({"target"}),
    "SUPERSEDE": frozenset({"target", "content"}),
    "INVALIDATE": frozenset({"target"}),
    "MERGE": frozenset({"content"}),
}


def _string(raw: dict[str, Any], field: str, fail: Callable[[str], ExtractionError]) -> str | None:
    value = raw.get(field)
    if value is not None and not isinstance(value, str):
        raise fail(f"{field} must be a string or null")
    return value


def _date(value: object, now: datetime, fail: Callable[[str], ExtractionError]) -> datetime | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise fail("valid_from must be an ISO 8601 string or null")
    text = value.strip()
    if re.fullmatch(r"\d{4}(-\d{2})?", text):
        text += "-01" * (3 - len(text.split("-")))
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise fail(f"valid_from {value!r} is not an ISO 8601 date") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=now.tzinfo)
    return moment if moment <= now else None
