"""mem0's memories as a document (:mod:`.document`), to switch from mem0.

Reads what mem0's ``Memory.get_all(...)`` returns (``{"results": [...]}``, or the bare
list older versions return) and its platform's export (``{"memories": [...]}``): each
memory has its text (``memory``), id, user (``user_id``), and times (``created_at``,
``updated_at``). Each becomes an active belief of its user, valid from when mem0 made
it, whose source says ``mem0`` (``item_ref``: ``mem0:<id>``; ``session``: its
``run_id``), with an ``ADD`` in the ledger; memories of one user that say the same thing
become one belief with a source for each. mem0 keeps no verbatim record of what was said,
so no episodes come with them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ...checks import check_id
from ...errors import ConfigError, DocumentError
from ...secrets.scan import find_secrets
from ..ops import MAX_CONTENT_CHARS
from ..records import normalize_content
from .document import FORMAT, VERSION, dumps

EXTRACTOR = "mem0"
# What the ledger's snapshot of a belief holds (beside its id): see engine.batch.snapshot.
_SNAPSHOT = (
    "content", "key", "status", "confidence", "version", "valid_from", "valid_to",
    "superseded_by", "merged_into",
)  # fmt: skip
MAX_FILE_BYTES = 1 << 30


def memories_of(raw: object) -> list[Mapping[str, Any]]:
    """The memories in what mem0 returned or exported."""
    found: object = raw
    if isinstance(raw, dict):
        for name in ("results", "memories"):
            if name in raw:
                found = raw[name]
                break
        else:
            raise DocumentError(0, "not mem0's get_all output: no 'results' or 'memories'")
    if not isinstance(found, list) or not all(isinstance(m, dict) for m in found):
        raise DocumentError(0, "not mem0's get_all output: the memories must be a list of objects")
    return found


def convert(
    source: Path,
    target: Path,
    *,
    user_id: str | None,
    now: datetime,
    screen: Callable[[str], str | None] | None = None,
) -> list[str]:
    """Write the document of the mem0 memories in ``source`` to ``target``. ``user_id``:
    the user of memories that name none. ``screen``: what a memory's text addresses to an
    assistant, if anything (mem0's memories were written by a model, as an extractor's
    ops are, and pass the same screen): such a memory is left out. Returns what was left
    out, one line each."""
    if user_id is not None:
        user_id = check_id("user_id", user_id)
    if not source.is_file():
        what = "a folder, not a file" if source.is_dir() else "no such file"
        raise DocumentError(0, f"{source}: {what}")
    if source.stat().st_size > MAX_FILE_BYTES:
        raise DocumentError(0, f"{source}: over {MAX_FILE_BYTES} bytes")
    try:
        raw = json.loads(source.read_bytes())
    except (ValueError, UnicodeDecodeError) as exc:
        raise DocumentError(0, f"{source}: not JSON ({str(exc).split(':')[0]})") from None
    memories = memories_of(raw)
    users: dict[str, dict[str, dict[str, Any]]] = {}  # user -> normalized text -> belief
    left_out: list[str] = []
    for index, memory in enumerate(memories):
        user, text, made, changed = _read(memory, index, user_id, now)
        said = screen(text) if screen is not None else None
        if said is not None:
            left_out.append(f"memory {index} of {user!r}: addressed to the assistant ({said})")
            continue
        beliefs = users.setdefault(user, {})
        source_row = {
            "session": _text(memory.get("run_id")),
            "item_ref": f"mem0:{memory['id']}" if memory.get("id") else None,
            "evidence": None,
            "observed_at": made.isoformat(),
            "extractor": EXTRACTOR,
            "turn": None,
            "episode": None,
            "created_at": made.isoformat(),
        }
        same = beliefs.get(normalize_content(text))
        if same is None:
            beliefs[normalize_content(text)] = {
                "content": text,
                "made": made,
                "changed": changed,
                "sources": [source_row],
            }
        else:
            same["made"] = min(same["made"], made)
            same["changed"] = max(same["changed"], changed)
            same["sources"].append(source_row)
    records = 0
    with target.open("w", encoding="utf-8") as out:
        head = {"kind": "header", "format": FORMAT, "version": VERSION}
        head |= {"exported_at": now.isoformat(), "embedding_model": None, "source": EXTRACTOR}
        out.write(dumps(head) + "\n")
        for user in sorted(users):
            made_first = min(b["made"] for b in users[user].values())
            out.write(dumps(_user(user, made_first)) + "\n")
            records += 1
            ordered = sorted(users[user].values(), key=lambda b: b["made"])
            for ref, belief in enumerate(ordered, start=1):
                out.write(dumps(_belief(user, ref, belief)) + "\n")
            for ref, belief in enumerate(ordered, start=1):
                out.write(dumps(_added(user, ref, belief)) + "\n")
            records += 2 * len(ordered)
        out.write(dumps({"kind": "end", "users": len(users), "records": records}) + "\n")
    return left_out


def _read(
    memory: Mapping[str, Any], index: int, user_id: str | None, now: datetime
) -> tuple[str, str, datetime, datetime]:
    where = f"memory {index}" + (f" (id {memory['id']})" if memory.get("id") else "")
    try:
        user = memory.get("user_id") or user_id
        if user is None:
            raise ConfigError("names no user_id: give the user (--user)")
        user = check_id("user_id", user)
    except ConfigError as exc:
        raise DocumentError(0, f"{where}: {exc}") from None
    text = memory.get("memory", memory.get("text"))
    if not isinstance(text, str) or not text.strip():
        raise DocumentError(0, f"{where}: no text ('memory')")
    text = " ".join(text.split())
    if len(text) > MAX_CONTENT_CHARS:
        raise DocumentError(
            0, f"{where}: {len(text)} characters, over the limit of {MAX_CONTENT_CHARS}"
        )
    if found := find_secrets(text):
        raise DocumentError(
            0, f"{where}: holds a secret ({found[0].label}); memory never stores one"
        )
    made = _moment(memory.get("created_at"), where, "created_at") or now
    changed = _moment(memory.get("updated_at"), where, "updated_at") or made
    return user, text, made, max(made, changed)


def _moment(value: object, where: str, name: str) -> datetime | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise DocumentError(0, f"{where}: {name} is not a time")
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise DocumentError(0, f"{where}: {name} is not an ISO 8601 time: {value!r:.40}") from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def _user(user: str, made: datetime) -> dict[str, Any]:
    return {"kind": "user", "user": user, "timezone": None, "created_at": made.isoformat()}


def _belief(user: str, ref: int, belief: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "kind": "belief",
        "user": user,
        "ref": ref,
        "content": belief["content"],
        "key": None,
        "status": "active",
        "confidence": 0.8,
        "version": 1,
        "valid_from": belief["made"].isoformat(),
        "valid_to": None,
        "created_at": belief["made"].isoformat(),
        "updated_at": belief["changed"].isoformat(),
        "last_confirmed_at": None,
        "superseded_by": None,
        "merged_into": None,
        "twins": [],
        "sources": belief["sources"],
    }


def _added(user: str, ref: int, belief: Mapping[str, Any]) -> dict[str, Any]:
    line = _belief(user, ref, belief)
    after = {name: line[name] for name in _SNAPSHOT} | {"id": ref, "extractor": EXTRACTOR}
    return {
        "kind": "event",
        "user": user,
        "op": "ADD",
        "belief": ref,
        "related": [],
        "before": None,
        "after": after,
        "reason": "imported from mem0",
        "turn": None,
        "created_at": belief["made"].isoformat(),
    }
