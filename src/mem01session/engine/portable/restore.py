"""Writing one user's part of a checked document (:mod:`.document`) into the memory.

One transaction per user, under the user's lock: a failure (or a killed process) leaves
the user as before, and the next import writes them whole. The user must have no memory
here yet; a user a former import of the same document wrote (the ledger's ``IMPORT`` row
holds the digest of their lines) is skipped, so that importing twice changes nothing.
An erased user is refused until reinstated.

Rows come in batches from the document and go out in batches: the passages and
statements are embedded with this memory's model (vectors are not in a document), the
word counts and the user's counters follow, the ids are new (the document's refs are
mapped as they are written), and the provenance (times, conversations, turns, authors)
is the document's. Each of the document's turns becomes a job row of the user (done,
keyed ``import:<turn>``), which the episodes, provenance rows and ledger rows point at.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any

from ...db.vectors import BinaryVector, BinaryVectors
from ...errors import ImportConflictError, UserErasedError
from ...secrets.redaction import redact
from ...secrets.scan import redact_secrets
from .. import episodes, near, terms
from ..engine_parts import EngineParts
from ..records import normalize_content
from ..tx import Tx, transaction
from ..users import lock_user
from .document import Record, UserPart
from .export import map_snapshot
from .report import Restored

BATCH = 256
"""Rows embedded and written per statement."""

Lines = Callable[[], Iterator[Record]]
"""The user's records after its user line, read afresh at each call."""


_STATE = """
SELECT u.erased_at,
       EXISTS (SELECT 1 FROM beliefs WHERE user_id = :u)
       OR EXISTS (SELECT 1 FROM episodes WHERE user_id = :u) AS holds,
       EXISTS (SELECT 1 FROM belief_events WHERE user_id = :u AND op = 'IMPORT'
               AND after ->> 'digest' = :digest) AS imported
FROM (SELECT :u AS user_id) w LEFT JOIN memory_users u ON u.user_id = w.user_id"""
_OPEN = """
INSERT INTO memory_users (user_id, created_at, updated_at, timezone, erased_at, version)
VALUES (:u, :created, :now, :zone, :erased, 1)
ON CONFLICT (user_id) DO UPDATE SET updated_at = :now,
  timezone = coalesce(EXCLUDED.timezone, memory_users.timezone),
  created_at = least(memory_users.created_at, EXCLUDED.created_at),
  erased_at = EXCLUDED.erased_at, version = memory_users.version + 1"""
_JOBS = """
INSERT INTO memory_jobs (user_id, session_id, payload, idempotency_key, status, run_after,
                         created_at, updated_at)
SELECT :u, r.session, jsonb_build_object('messages', '[]'::jsonb, 'observed_at', r.said,
       'imported', true), 'import:' || r.turn, 'done', :now, :now, :now
FROM unnest(CAST(:sessions AS text[]), CAST(:turns AS text[]), CAST(:saids AS text[]))
     AS r(session, turn, said)
ON CONFLICT (user_id, idempotency_key) DO UPDATE SET updated_at = memory_jobs.updated_at
RETURNING id, substr(idempotency_key, 8) AS turn"""
_IDS = "SELECT nextval(CAST(:seq AS regclass)) AS id FROM generate_series(1, :n)"
_EPISODES = """
INSERT INTO episodes (user_id, id, session_id, job_id, message, passage, item_ref, role,
                      content, context, said_at, hidden_at, created_at, embedding,
                      embedding_model)
SELECT :u, r.id, r.session, r.job, r.message, r.passage, r.item_ref, r.role, r.content,
       r.context, r.said, r.hidden, coalesce(r.created, r.said), r.vec, :model
FROM unnest(CAST(:ids AS bigint[]), CAST(:sessions AS text[]), CAST(:jobs AS bigint[]),
            CAST(:messages AS smallint[]), CAST(:passages AS smallint[]),
            CAST(:refs AS text[]), CAST(:roles AS text[]), CAST(:contents AS text[]),
            CAST(:contexts AS text[]), CAST(:saids AS timestamptz[]),
            CAST(:hiddens AS timestamptz[]), CAST(:createds AS timestamptz[]),
            CAST(:vecs AS vector[]))
     AS r(id, session, job, message, passage, item_ref, role, content, context, said, hidden,
          created, vec)"""
_BELIEFS = """
INSERT INTO beliefs (user_id, id, content, norm_content, key, status, confidence, valid_from,
                     valid_to, created_at, updated_at, last_confirmed_at, version, embedding,
                     embedding_model)
SELECT :u, r.id, r.content, r.norm, r.key, r.status, r.confidence, r.valid_from, r.valid_to,
       coalesce(r.created, r.valid_from), coalesce(r.updated, r.created, r.valid_from),
       r.confirmed, r.version, r.vec, :model
FROM unnest(CAST(:ids AS bigint[]), CAST(:contents AS text[]), CAST(:norms AS text[]),
            CAST(:keys AS text[]), CAST(:statuses AS text[]), CAST(:confidences AS float8[]),
            CAST(:valid_froms AS timestamptz[]), CAST(:valid_tos AS timestamptz[]),
            CAST(:createds AS timestamptz[]), CAST(:updateds AS timestamptz[]),
            CAST(:confirmeds AS timestamptz[]), CAST(:versions AS integer[]),
            CAST(:vecs AS vector[]))
     AS r(id, content, norm, key, status, confidence, valid_from, valid_to, created, updated,
          confirmed, version, vec)"""
_SOURCES = """
INSERT INTO belief_sources (user_id, belief_id, session_id, item_ref, evidence, observed_at,
                            extractor, job_id, episode_id, created_at)
SELECT :u, r.belief, r.session, r.item_ref, r.evidence, r.observed, r.extractor, r.job,
       r.episode, coalesce(r.created, r.observed)
FROM unnest(CAST(:beliefs AS bigint[]), CAST(:sessions AS text[]), CAST(:refs AS text[]),
            CAST(:evidences AS text[]), CAST(:observeds AS timestamptz[]),
            CAST(:extractors AS text[]), CAST(:jobs AS bigint[]), CAST(:episodes AS bigint[]),
            CAST(:createds AS timestamptz[]))
     AS r(belief, session, item_ref, evidence, observed, extractor, job, episode, created)"""
_LINKS = """
UPDATE beliefs b SET superseded_by = r.superseded_by, merged_into = r.merged_into
FROM unnest(CAST(:ids AS bigint[]), CAST(:superseded AS bigint[]), CAST(:merged AS bigint[]))
     AS r(id, superseded_by, merged_into)
WHERE b.user_id = :u AND b.id = r.id"""
_TWINS = """
INSERT INTO belief_twins (user_id, belief_id, twin_id)
SELECT :u, r.a, r.b FROM unnest(CAST(:a AS bigint[]), CAST(:b AS bigint[])) AS r(a, b)
ON CONFLICT DO NOTHING"""
_EVENTS = """
INSERT INTO belief_events (user_id, op, belief_id, related_ids, before, after, reason, job_id,
                           created_at)
SELECT :u, r.op, r.belief, coalesce(
         (SELECT array_agg(x::bigint) FROM jsonb_array_elements_text(r.related) x), '{}'),
       r.before, r.after, r.reason, r.job, r.created
FROM unnest(CAST(:ops AS text[]), CAST(:beliefs AS bigint[]), CAST(:relateds AS jsonb[]),
            CAST(:befores AS jsonb[]), CAST(:afters AS jsonb[]), CAST(:reasons AS text[]),
            CAST(:jobs AS bigint[]), CAST(:createds AS timestamptz[]))
     AS r(op, belief, related, before, after, reason, job, created)"""
_RECORD = """
INSERT INTO belief_events (user_id, op, belief_id, related_ids, after, reason, created_at)
VALUES (:u, 'IMPORT', NULL, '{}', CAST(:after AS jsonb), :reason, :now)"""
_COUNTS = """
UPDATE memory_users SET episodes = episodes + :episodes,
  active_beliefs = active_beliefs + :active, version = version + 1, updated_at = :now
WHERE user_id = :u"""
_EPISODE_TERMS_UP = terms.count_up("episode_terms")
_BELIEF_TERMS_UP = terms.count_up("belief_terms")


def scrub(text: str | None) -> str | None:
    """``text`` without secrets (as a turn's payload is stored: what a document says the
    user said may hold one; a belief that does is refused when the document is checked)."""
    return None if text is None else redact_secrets(redact(text))[0]


async def restore_user(
    parts: EngineParts,
    part: UserPart,
    user: Record,
    lines: Lines,
    *,
    same_model: bool,
    source: str,
    progress: Callable[[int], None] | None = None,
) -> Restored:
    """Write ``part`` (its user line ``user``; ``lines`` reads the rest) in one
    transaction. ``same_model``: the document's near-duplicate links were made by this
    memory's embedding model (else they are found anew). ``progress`` is told how many
    records were written after each batch."""
    writer = _Writer(parts, part, user, same_model, source, progress)
    return await transaction(parts.db.direct, lambda tx: writer.write(tx, lines))


class _Writer:
    def __init__(
        self,
        parts: EngineParts,
        part: UserPart,
        user: Record,
        same_model: bool,
        source: str,
        progress: Callable[[int], None] | None,
    ) -> None:
        self.parts = parts
        self.part = part
        self.user = user
        self.u = part.user_id
        self.same_model = same_model
        self.source = source
        self.progress = progress or (lambda _n: None)
        self.model = parts.embedder.name

    async def write(self, tx: Tx, lines: Lines) -> Restored:
        self.tx = tx
        self.now = self.parts.now()
        self.episode_ids: dict[int, int] = {}
        self.belief_ids: dict[int, int] = {}
        self.jobs: dict[str, int] = {}
        self.links: list[tuple[int, int | None, int | None]] = []  # id, superseded, merged refs
        self.twins: list[tuple[int, int]] = []  # refs
        self.visible = self.active = 0
        self.written = 0
        await lock_user(tx, self.u)
        state = await tx.one(_STATE, {"u": self.u, "digest": self.part.digest})
        erased = self.user["erased_at"] is not None
        if state["imported"] or (erased and state["erased_at"] is not None):
            return Restored(self.u, 0, 0, 0, skipped=True)
        if state["erased_at"] is not None:
            raise UserErasedError(
                f"user {self.u!r} was erased here: reinstate them (mem01session reinstate) "
                "before importing their memory"
            )
        if state["holds"]:
            raise ImportConflictError(
                f"user {self.u!r} already has memory here: an import writes only users who "
                "have none (erase them first, or import under another id)"
            )
        await tx.run(
            _OPEN,
            {
                "u": self.u,
                "created": self.user["created_at"] or self.now,
                "now": self.now,
                "zone": self.user["timezone"],
                "erased": self.user["erased_at"],
            },
        )
        if erased:  # the erase travels with the user: later writes are refused here too
            return Restored(self.u, 0, 0, 0)
        batch: list[Record] = []
        kind = "episode"
        for record in lines():
            if record["kind"] == "transcript":  # the memory's transcript store takes them
                continue
            if record["kind"] != kind or len(batch) >= BATCH:
                await self._flush(kind, batch)
                batch, kind = [], record["kind"]
            batch.append(record)
        await self._flush(kind, batch)
        await self._finish()
        return Restored(self.u, self.part.episodes, self.part.beliefs, self.part.events)

    async def _flush(self, kind: str, batch: list[Record]) -> None:
        if not batch:
            return
        if kind == "episode":
            await self._episodes(batch)
        elif kind == "belief":
            await self._beliefs(batch)
        else:
            await self._events(batch)
        self.written += len(batch)
        self.progress(len(batch))

    async def _ids(self, table: str, n: int) -> list[int]:
        rows = await self.tx.rows(_IDS, {"seq": f"{table}_id_seq", "n": n})
        return [int(r["id"]) for r in rows]

    async def _turns(self, wanted: Sequence[tuple[str, str, datetime]]) -> None:
        """Job rows for the turns (key, conversation, when) not yet mapped."""
        new = {t: (s, at) for t, s, at in wanted if t not in self.jobs}
        if not new:
            return
        rows = await self.tx.rows(
            _JOBS,
            {
                "u": self.u,
                "now": self.now,
                "turns": list(new),
                "sessions": [s for s, _ in new.values()],
                "saids": [at.isoformat() for _, at in new.values()],
            },
        )
        self.jobs |= {str(r["turn"]): int(r["id"]) for r in rows}

    async def _embed(self, texts: Sequence[str]) -> BinaryVectors:
        vectors = await self.parts.embedder.embed(list(texts))
        if len(vectors) != len(texts):
            raise RuntimeError(f"embedder returned {len(vectors)} vectors for {len(texts)} texts")
        return BinaryVectors(BinaryVector(v) for v in vectors)

    async def _episodes(self, batch: list[Record]) -> None:
        await self._turns([(r["turn"], r["session"], r["said_at"]) for r in batch])
        ids = await self._ids("episodes", len(batch))
        contents = [scrub(r["content"]) or "" for r in batch]
        contexts = [scrub(r["context"]) for r in batch]
        said = list(zip(contents, contexts, strict=True))
        vectors = await episodes.embed_said(self.parts.embedder, said)
        await self.tx.run(
            _EPISODES,
            {
                "u": self.u,
                "model": self.model,
                "ids": ids,
                "sessions": [r["session"] for r in batch],
                "jobs": [self.jobs[r["turn"]] for r in batch],
                "messages": [r["message"] for r in batch],
                "passages": [r["passage"] for r in batch],
                "refs": [r["item_ref"] for r in batch],
                "roles": [r["role"] for r in batch],
                "contents": contents,
                "contexts": contexts,
                "saids": [r["said_at"] for r in batch],
                "hiddens": [r["hidden_at"] for r in batch],
                "createds": [r["created_at"] for r in batch],
                "vecs": BinaryVectors(BinaryVector(v) for v in vectors),
            },
        )
        self.episode_ids |= {r["ref"]: i for r, i in zip(batch, ids, strict=True)}
        words = [
            c if x is None else f"{c}\n{x}"
            for r, c, x in zip(batch, contents, contexts, strict=True)
            if r["hidden_at"] is None
        ]
        if words:
            await self.tx.run(_EPISODE_TERMS_UP, {"u": self.u, "texts": words})
        self.visible += len(words)

    async def _beliefs(self, batch: list[Record]) -> None:
        ids = await self._ids("beliefs", len(batch))
        self.belief_ids |= {r["ref"]: i for r, i in zip(batch, ids, strict=True)}
        contents = [r["content"] for r in batch]
        await self.tx.run(
            _BELIEFS,
            {
                "u": self.u,
                "model": self.model,
                "ids": ids,
                "contents": contents,
                "norms": [normalize_content(c) for c in contents],
                "keys": [r["key"] for r in batch],
                "statuses": [r["status"] for r in batch],
                "confidences": [r["confidence"] for r in batch],
                "valid_froms": [r["valid_from"] for r in batch],
                "valid_tos": [r["valid_to"] for r in batch],
                "createds": [r["created_at"] for r in batch],
                "updateds": [r["updated_at"] for r in batch],
                "confirmeds": [r["last_confirmed_at"] for r in batch],
                "versions": [r["version"] for r in batch],
                "vecs": await self._embed(contents),
            },
        )
        active = [r["content"] for r in batch if r["status"] == "active"]
        if active:
            await self.tx.run(_BELIEF_TERMS_UP, {"u": self.u, "texts": active})
        self.active += len(active)
        for r, i in zip(batch, ids, strict=True):
            if r["superseded_by"] is not None or r["merged_into"] is not None:
                self.links.append((i, r["superseded_by"], r["merged_into"]))
            self.twins += [(r["ref"], t) for t in r["twins"]]
        sources = [(i, s) for r, i in zip(batch, ids, strict=True) for s in r["sources"]]
        await self._turns(
            [
                (s["turn"], s["session"] or "imported", s["observed_at"])
                for _, s in sources
                if s["turn"]
            ]
        )
        if sources:
            await self.tx.run(
                _SOURCES,
                {
                    "u": self.u,
                    "beliefs": [i for i, _ in sources],
                    "sessions": [s["session"] for _, s in sources],
                    "refs": [s["item_ref"] for _, s in sources],
                    "evidences": [scrub(s["evidence"]) for _, s in sources],
                    "observeds": [s["observed_at"] for _, s in sources],
                    "extractors": [s["extractor"] for _, s in sources],
                    "jobs": [self.jobs.get(s["turn"]) if s["turn"] else None for _, s in sources],
                    "episodes": [
                        self.episode_ids[s["episode"]] if s["episode"] else None for _, s in sources
                    ],
                    "createds": [s["created_at"] for _, s in sources],
                },
            )

    async def _events(self, batch: list[Record]) -> None:
        await self._turns([(r["turn"], "imported", r["created_at"]) for r in batch if r["turn"]])
        ids = self.belief_ids
        await self.tx.run(
            _EVENTS,
            {
                "u": self.u,
                "ops": [r["op"] for r in batch],
                "beliefs": [ids[r["belief"]] if r["belief"] else None for r in batch],
                "relateds": [json.dumps([ids[x] for x in r["related"]]) for r in batch],
                "befores": [_json(map_snapshot(r["before"], ids)) for r in batch],
                "afters": [_json(map_snapshot(r["after"], ids)) for r in batch],
                "reasons": [r["reason"] for r in batch],
                "jobs": [self.jobs.get(r["turn"]) if r["turn"] else None for r in batch],
                "createds": [r["created_at"] for r in batch],
            },
        )

    async def _finish(self) -> None:
        u, ids = self.u, self.belief_ids
        for start in range(0, len(self.links), BATCH * 8):
            chunk = self.links[start : start + BATCH * 8]
            await self.tx.run(
                _LINKS,
                {
                    "u": u,
                    "ids": [i for i, _, _ in chunk],
                    "superseded": [ids[s] if s else None for _, s, _ in chunk],
                    "merged": [ids[m] if m else None for _, _, m in chunk],
                },
            )
        if self.same_model:
            for start in range(0, len(self.twins), BATCH * 8):
                pairs = self.twins[start : start + BATCH * 8]
                await self.tx.run(
                    _TWINS,
                    {"u": u, "a": [ids[a] for a, _ in pairs], "b": [ids[b] for _, b in pairs]},
                )
        else:
            every = list(ids.values())
            for start in range(0, len(every), BATCH):
                await near.link(self.tx, u, every[start : start + BATCH])
        await self.tx.run(
            _COUNTS,
            {"u": u, "episodes": self.visible, "active": self.active, "now": self.now},
        )
        after = {
            "extractor": "import",
            "source": self.source,
            "digest": self.part.digest,
            "episodes": self.part.episodes,
            "beliefs": self.part.beliefs,
            "events": self.part.events,
        }
        await self.tx.run(
            _RECORD,
            {
                "u": u,
                "after": json.dumps(after),
                "reason": f"imported ({self.source})",
                "now": self.now,
            },
        )


def _json(value: Mapping[str, Any] | None) -> str | None:
    return None if value is None else json.dumps(value)
