"""Episodes on the write path: which messages are kept, their passages, and their rows.

An episode is one passage of one message of a turn, verbatim (the job's text, already
screened for secrets), dated by when the turn was said. :class:`EpisodePolicy` says which
messages are kept (the user's, every message, or none) and for how long. The worker hands
the turn's messages to the engine as :class:`Utterance` objects; the engine splits each
into passages (:mod:`.passages`), the first of a user's message keeping the end of the
message it answered as its context (searched by its words, and a share of its vector's,
:func:`contextual`), embeds them with the batch's statements, and
:func:`insert` writes them in the transaction that applies the turn's ops, so that a turn
is kept exactly once. The user's word counts (``episode_terms``, what recall's word rarity
rests on) follow every episode that enters or leaves recall, in the same transaction.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

from ..config import EPISODE_KEEPS, EpisodeKeep, check_retention_days
from ..db.vectors import BinaryVector, BinaryVectors
from ..embeddings import Embedder, Vector
from ..errors import ConfigError
from ..tokens import TokenCounter
from . import terms
from .passages import SPACE, passages, tail
from .tx import Tx


@dataclass(frozen=True)
class EpisodePolicy:
    """Which messages become episodes and how long they are kept.

    ``keep``: ``"user"`` (the user's own messages, the default), ``"all"`` (the
    assistant's replies too) or ``"off"`` (none kept, none recalled). ``retention_days``:
    episodes said longer ago leave recall and are deleted by the next write for the user
    (None: kept until the user is erased).
    """

    keep: EpisodeKeep = "user"
    retention_days: int | None = None

    def __post_init__(self) -> None:
        if self.keep not in EPISODE_KEEPS:
            raise ConfigError(f"episodes must be 'user', 'all' or 'off', got {self.keep!r:.40}")
        check_retention_days(self.retention_days, "episode retention")

    @property
    def enabled(self) -> bool:
        return self.keep != "off"

    def keeps(self, role: str) -> bool:
        """Whether a message of ``role`` becomes an episode."""
        return self.keep == "all" or (self.keep == "user" and role == "user")

    def oldest(self, now: datetime) -> datetime | None:
        """The earliest ``said_at`` still kept at ``now`` (None: no retention)."""
        return None if self.retention_days is None else now - timedelta(days=self.retention_days)


@dataclass(frozen=True)
class Utterance:
    """One message of a turn, as the worker hands it to the engine: its place in the turn,
    who said it, what (already screened), and the SDK item it came from. ``context``: what
    the message answered, the assistant message said before it in the conversation
    (already screened; its end is kept with the message's first passage, :func:`drafts`)."""

    message: int
    role: Literal["user", "assistant"]
    text: str
    item_ref: str | None = None
    context: str | None = None


@dataclass(frozen=True)
class Draft:
    """One episode row to insert: a passage of an utterance."""

    message: int
    passage: int
    role: Literal["user", "assistant"]
    content: str
    item_ref: str | None
    context: str | None = None


def drafts(
    utterances: Sequence[Utterance], policy: EpisodePolicy, counter: TokenCounter
) -> list[Draft]:
    """The episode rows a turn's messages make under ``policy``; the first passage of a
    message with a context keeps the context's end (:func:`tail`)."""
    out: list[Draft] = []
    for u in utterances:
        if not policy.keeps(u.role):
            continue
        context = tail(u.context, counter) or None if u.context else None
        for index, body in enumerate(passages(u.text, counter)):
            out.append(Draft(u.message, index, u.role, body, u.item_ref, context))
            context = None
    return out


CONTEXT_SHARE = 0.5
"""The weight of what a passage answered in its vector, against the passage's own words
(1). "Lisbon." alone is near nothing; after "Where do you live now?" it is near a question
about a home. Among a lifetime of other messages, a reply's own words are near many
lines shaped like a question; what it answered tells them apart. Chosen among shares from
0.3 to 1.0 on LoCoMo conversation 26 (0.5 to 0.7 came within a question or two of each
other; more cost the offline rules' block at 400 tokens); what it gives is in
docs/benchmarks.md (``python -m bench e2e``, ``python -m bench haystack``)."""


def contextual(words: Vector, context: Vector | None) -> Vector:
    """A passage's vector: its words' plus :data:`CONTEXT_SHARE` of its context's, each at
    unit length, the sum at unit length; its words' alone when it has no context."""
    if context is None:
        return words
    w, c = _norm(words), _norm(context)
    if not w or not c:  # a zero vector has no direction to add
        return list(words)
    total = [x / w + CONTEXT_SHARE * y / c for x, y in zip(words, context, strict=True)]
    n = _norm(total)
    return [x / n for x in total] if n else list(words)


def _norm(v: Sequence[float]) -> float:
    return math.sqrt(math.fsum(x * x for x in v))


def embedded(rows: Sequence[Draft]) -> list[str]:
    """The texts the vectors of ``rows`` are made of (:func:`vector_of`), each once."""
    return list(
        dict.fromkeys([*(d.content for d in rows), *(d.context for d in rows if d.context)])
    )


def vector_of(draft: Draft, vectors: Mapping[str, Vector]) -> Vector:
    """The vector ``draft`` is stored with, from the vectors of :func:`embedded` texts."""
    context = vectors[draft.context] if draft.context else None
    return contextual(vectors[draft.content], context)


async def embed_said(embedder: Embedder, said: Sequence[tuple[str, str | None]]) -> list[Vector]:
    """The vectors of passages given as (words, context), made as a turn's are
    (:func:`contextual`), in one call of ``embedder``."""
    texts = list(dict.fromkeys([*(w for w, _ in said), *(c for _, c in said if c)]))
    made = await embedder.embed(texts)
    if len(made) != len(texts):
        raise RuntimeError(f"embedder returned {len(made)} vectors for {len(texts)} texts")
    found = dict(zip(texts, made, strict=True))
    return [contextual(found[w], found[c] if c else None) for w, c in said]


_TERMS_UP = terms.count_up("episode_terms")
_TERMS_DOWN = terms.count_down("episode_terms")
_COUNT = "UPDATE memory_users SET episodes = greatest(0, episodes + :n) WHERE user_id = :u"
_INSERT = (
    "INSERT INTO episodes (user_id, session_id, job_id, message, passage, item_ref, role, "
    "content, context, said_at, embedding, embedding_model, created_at) "
    "SELECT :u, :session, :job, r.message, r.passage, r.item_ref, r.role, r.content, "
    "r.context, :said, r.vec, :model, :now "
    "FROM unnest(CAST(:messages AS smallint[]), CAST(:passages AS smallint[]), "
    "CAST(:refs AS text[]), CAST(:roles AS text[]), CAST(:contents AS text[]), "
    "CAST(:contexts AS text[]), CAST(:vecs AS vector[])) "
    "AS r(message, passage, item_ref, role, content, context, vec) "
    "ON CONFLICT (user_id, job_id, message, passage) DO NOTHING "
    "RETURNING id, message, passage, role, content, context"
)


@dataclass(frozen=True)
class Stored:
    """An episode row just written: its id and what the batch's sources match against."""

    id: int
    message: int
    passage: int
    role: str
    content: str


async def insert(
    tx: Tx,
    user_id: str,
    rows: Sequence[Draft],
    *,
    session_id: str,
    job_id: int,
    said_at: datetime,
    vectors: Sequence[BinaryVector],
    model: str,
    now: datetime,
) -> tuple[list[Stored], int]:
    """Write the turn's episodes with their ``vectors`` (one per row, :func:`vector_of`; one
    statement; a row already there, kept when the turn's job failed before, is left alone)
    and count their words; returns the turn's episodes,
    in turn order, and how many of them are new (the caller adds them to the user's
    count, :func:`~.users.bump_version`)."""
    if not rows:
        return [], 0
    _check_vectors(len(rows), vectors)
    result = await tx.rows(
        _INSERT,
        {
            "u": user_id,
            "session": session_id,
            "job": job_id,
            "said": said_at,
            "model": model,
            "now": now,
            "messages": [r.message for r in rows],
            "passages": [r.passage for r in rows],
            "refs": [r.item_ref for r in rows],
            "roles": [r.role for r in rows],
            "contents": [r.content for r in rows],
            "contexts": [r.context for r in rows],
            "vecs": BinaryVectors(vectors),
        },
    )
    written = [_stored(r) for r in result]
    added = len(written)
    await _count(tx, user_id, [_words(r) for r in result], up=True, users=False)
    if len(written) < len(rows):  # the turn was kept before (its job failed, then retried)
        found = await tx.rows(
            "SELECT id, message, passage, role, content FROM episodes "
            "WHERE user_id = :u AND job_id = :job",
            {"u": user_id, "job": job_id},
        )
        written = [_stored(r) for r in found]
    return sorted(written, key=lambda s: (s.message, s.passage)), added


def _check_vectors(rows: int, vectors: Sequence[BinaryVector]) -> None:
    if len(vectors) != rows:  # unnest would pad the shorter array with NULLs
        raise ValueError(f"{len(vectors)} vectors for {rows} episodes")


_INSERT_MANY = (
    "INSERT INTO episodes (user_id, session_id, job_id, message, passage, item_ref, role, "
    "content, context, said_at, embedding, embedding_model, created_at) "
    "SELECT r.u, r.session, r.job, r.message, r.passage, r.item_ref, r.role, r.content, "
    "r.context, r.said, r.vec, :model, :now "
    "FROM unnest(CAST(:users AS text[]), CAST(:sessions AS text[]), CAST(:jobs AS bigint[]), "
    "CAST(:saids AS timestamptz[]), CAST(:messages AS smallint[]), "
    "CAST(:passages AS smallint[]), CAST(:refs AS text[]), CAST(:roles AS text[]), "
    "CAST(:contents AS text[]), CAST(:contexts AS text[]), CAST(:vecs AS vector[])) "
    "AS r(u, session, job, said, message, passage, item_ref, role, content, context, vec) "
    "ON CONFLICT (user_id, job_id, message, passage) DO NOTHING "
    "RETURNING user_id, job_id, id, message, passage, role, content, context"
)


@dataclass(frozen=True)
class TurnEpisodes:
    """One turn's episode rows to write in a group (:func:`insert_many`)."""

    user_id: str
    session_id: str
    job_id: int
    said_at: datetime
    drafts: Sequence[Draft]
    vectors: Sequence[BinaryVector]  # one per draft (vector_of)


async def insert_many(
    tx: Tx, turns: Sequence[TurnEpisodes], *, model: str, now: datetime
) -> list[tuple[list[Stored], int]]:
    """:func:`insert` for several turns (each of another user) in one statement; per turn,
    its episodes in turn order and how many are new."""
    rows = [(t, d) for t in turns for d in t.drafts]
    if not rows:
        return [([], 0) for _ in turns]
    for t in turns:
        _check_vectors(len(t.drafts), t.vectors)
    result = await tx.rows(
        _INSERT_MANY,
        {
            "model": model,
            "now": now,
            "users": [t.user_id for t, _ in rows],
            "sessions": [t.session_id for t, _ in rows],
            "jobs": [t.job_id for t, _ in rows],
            "saids": [t.said_at for t, _ in rows],
            "messages": [d.message for _, d in rows],
            "passages": [d.passage for _, d in rows],
            "refs": [d.item_ref for _, d in rows],
            "roles": [d.role for _, d in rows],
            "contents": [d.content for _, d in rows],
            "contexts": [d.context for _, d in rows],
            "vecs": BinaryVectors(v for t in turns for v in t.vectors),
        },
    )
    written: dict[tuple[str, int], list[Stored]] = {}
    for r in result:
        written.setdefault((str(r["user_id"]), int(r["job_id"])), []).append(_stored(r))
    if result:
        await tx.run(
            terms.count_up_many("episode_terms"),
            {"users": [r["user_id"] for r in result], "texts": [_words(r) for r in result]},
        )
    out = []
    for t in turns:
        mine = written.get((t.user_id, t.job_id), [])
        added = len(mine)
        if added < len(t.drafts):  # kept before (its job failed, then retried)
            found = await tx.rows(
                "SELECT id, message, passage, role, content FROM episodes "
                "WHERE user_id = :u AND job_id = :job",
                {"u": t.user_id, "job": t.job_id},
            )
            mine = [_stored(r) for r in found]
        out.append((sorted(mine, key=lambda s: (s.message, s.passage)), added))
    return out


def _words(row: Mapping[str, Any]) -> str:
    """An episode's words as its full-text column holds them, and as its user's word counts
    count them: the message's own and its context's."""
    context = row["context"]
    return str(row["content"]) if context is None else f"{row['content']}\n{context}"


def _stored(row: Mapping[str, Any]) -> Stored:
    return Stored(
        int(row["id"]), int(row["message"]), int(row["passage"]), str(row["role"]),
        str(row["content"]),
    )  # fmt: skip


async def _count(
    tx: Tx, user_id: str, contents: list[str], *, up: bool, users: bool = True
) -> None:
    """Keep the user's episode word counts in step with episodes entering (``up``) or
    leaving recall (and, with ``users``, the user's episode count)."""
    if not contents:
        return
    await tx.run(_TERMS_UP if up else _TERMS_DOWN, {"u": user_id, "texts": contents})
    if users:
        await tx.run(_COUNT, {"u": user_id, "n": len(contents) if up else -len(contents)})


async def hide_sources_of(tx: Tx, user_id: str, belief_id: int, now: datetime) -> int:
    """Keep the episodes ``belief_id`` was drawn from out of recall (a forgotten belief
    must not come back as a quote); returns how many were hidden."""
    hidden = await tx.rows(
        "UPDATE episodes e SET hidden_at = :now FROM belief_sources s "
        "WHERE e.user_id = :u AND s.user_id = :u AND s.belief_id = :b "
        "AND e.id = s.episode_id AND e.hidden_at IS NULL "
        "RETURNING e.content, e.context",
        {"u": user_id, "b": belief_id, "now": now},
    )
    contents = [_words(r) for r in hidden]
    await _count(tx, user_id, contents, up=False)
    return len(contents)


async def prune(tx: Tx, user_id: str, oldest: datetime) -> int:
    """Delete the user's episodes said before ``oldest`` (retention); returns how many."""
    rows = await tx.rows(
        "DELETE FROM episodes WHERE user_id = :u AND said_at < :oldest "
        "RETURNING content, context, hidden_at",
        {"u": user_id, "oldest": oldest},
    )
    # Hidden ones were counted out when they were hidden.
    kept = [_words(r) for r in rows if r["hidden_at"] is None]
    await _count(tx, user_id, kept, up=False)
    return len(rows)


def source_episode(stored: Sequence[Stored], evidence: str | None) -> int | None:
    """The episode a belief drawn from this turn points at: the user's passage that holds
    the op's evidence, else the user's first passage (None: no episode was kept)."""
    users = [s for s in stored if s.role == "user"]
    if not users:
        return None
    if evidence:
        wanted = SPACE.sub(" ", evidence).strip().casefold()
        for s in users:
            if wanted and wanted in s.content.casefold():
                return s.id
    return users[0].id
