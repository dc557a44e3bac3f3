"""What the engine takes and returns: recall requests, beliefs, their sources, ledger events,
receipts, recall results."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from datetime import UTC, datetime, tzinfo
from typing import Literal

from ..checks import check_flag, check_moment, check_positive_int, check_timezone
from ..errors import ConfigError

BeliefStatus = Literal["active", "superseded", "invalidated", "merged"]
BlockProvenance = Literal["none", "brief", "quote"]
"""How much of where each belief was said the memory block shows (see engine/render.py)."""
RecallKinds = Literal["all", "beliefs", "episodes"]
"""What a recall searches: beliefs and episodes (``"all"``), or one kind only."""
RECALL_KINDS: tuple[RecallKinds, ...] = ("all", "beliefs", "episodes")

DEFAULT_MAX_TOKENS = 800

_SPACE = re.compile(r"\s+")
_TRAILING = re.compile(r"[\s.!]+$")


def normalize_content(text: str) -> str:
    """The form two statements must share to count as the same belief."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    return _TRAILING.sub("", _SPACE.sub(" ", folded).strip())


@dataclass(frozen=True)
class RecallRequest:
    """What to recall, from the session down to the SQL.

    ``query`` is the user's message (``""``: the most recent, confident beliefs);
    ``max_tokens`` the budget of the whole block; ``include_history`` brings superseded,
    invalidated and merged beliefs too; ``as_of`` asks what was true at that moment;
    ``explain`` adds per-signal scores; ``provenance`` (``"none"``, ``"brief"``,
    ``"quote"``) is how much of where each belief was said the block shows; ``newer_turns``
    is how many recent turns of the conversation asking are not reflected in the records
    yet (the block says so, so that a record the conversation just made stale is not taken
    for the latest truth); ``kinds`` what is searched: beliefs and episodes (``"all"``),
    ``"beliefs"`` or ``"episodes"`` only (episodes are searched only where the engine keeps
    them); ``conversation`` and ``conversation_text``: the asking conversation and the
    user messages of it that the model reads already, so that its own words are not quoted
    back to it; ``pending_turns``: how many other turns of the user are still queued for
    extraction (the block says so); ``pending_said``: the words of the newest of them,
    newest first (the block quotes them); ``timezone``: the IANA zone whose days the block's
    dates are (the user's; None: UTC). A malformed field raises :class:`ConfigError`.
    """

    query: str
    max_tokens: int = DEFAULT_MAX_TOKENS
    include_history: bool = False
    as_of: datetime | None = None
    explain: bool = False
    newer_turns: int = 0
    provenance: BlockProvenance = "none"
    kinds: RecallKinds = "all"
    conversation: str | None = None
    conversation_text: str = ""
    pending_turns: int = 0
    pending_said: tuple[str, ...] = ()
    timezone: str | None = None
    zone: tzinfo = field(default=UTC, init=False, repr=False, compare=False)
    """The zone of :attr:`timezone` (UTC when None)."""

    def __post_init__(self) -> None:
        if self.query is None:
            object.__setattr__(self, "query", "")
        elif not isinstance(self.query, str):
            raise ConfigError(f"query must be a string, got {type(self.query).__name__}")
        check_positive_int("max_tokens", self.max_tokens)
        check_flag("include_history", self.include_history)  # "no" would bring history
        check_flag("explain", self.explain)
        check_positive_int("newer_turns", self.newer_turns, minimum=0)
        check_positive_int("pending_turns", self.pending_turns, minimum=0)
        if not isinstance(self.pending_said, tuple) or not all(
            isinstance(said, str) for said in self.pending_said
        ):
            raise ConfigError("pending_said must be a tuple of strings")
        if self.provenance not in ("none", "brief", "quote"):
            raise ConfigError(
                f"provenance must be 'none', 'brief' or 'quote', got {self.provenance!r}"
            )
        if self.kinds not in RECALL_KINDS:
            raise ConfigError(
                f"kinds must be 'all', 'beliefs' or 'episodes', got {self.kinds!r:.40}"
            )
        if self.as_of is not None:
            object.__setattr__(self, "as_of", check_moment("as_of", self.as_of))
        if self.timezone is not None:
            object.__setattr__(self, "zone", check_timezone("timezone", self.timezone))


@dataclass(frozen=True)
class Source:
    """Provenance of a belief: where and when it was said."""

    session_id: str | None
    item_ref: str | None
    evidence: str | None
    observed_at: datetime
    extractor: str | None
    job_id: int | None = None
    episode_id: int | None = None
    """The episode holding the words the belief was drawn from (None: none was kept)."""


@dataclass(frozen=True)
class Belief:
    """One durable statement about a user."""

    id: int
    user_id: str
    content: str
    key: str | None
    status: BeliefStatus
    confidence: float
    valid_from: datetime
    valid_to: datetime | None
    created_at: datetime
    updated_at: datetime
    version: int
    superseded_by: int | None = None
    merged_into: int | None = None
    last_confirmed_at: datetime | None = None
    sources: tuple[Source, ...] = ()

    def says(self, statement: str) -> bool:
        """Whether this belief's statement is ``statement``, compared as the engine compares
        statements (case, spacing and a closing full stop aside)."""
        return normalize_content(self.content) == normalize_content(statement)


@dataclass(frozen=True)
class Episode:
    """What someone said in a conversation, verbatim (after the secret screen) and dated:
    one passage of one message of a turn. Never edited; ``hidden_at`` is set when a belief
    drawn from it is forgotten, and keeps it out of recall."""

    id: int
    user_id: str
    session_id: str
    job_id: int
    message: int
    """The message's place in its turn (0: the first)."""
    passage: int
    """The passage's place in its message (0: the first; a long message has several)."""
    role: Literal["user", "assistant"]
    content: str
    said_at: datetime
    item_ref: str | None = None
    hidden_at: datetime | None = None
    belief_ids: tuple[int, ...] = ()
    """Beliefs drawn from it (filled by recall and by :meth:`BeliefEngine.episode`)."""
    context: str | None = None
    """The end of the assistant message it answered (a first passage of a user's message;
    full-text recall finds the passage by it too, and a short quote shows its question)."""


@dataclass(frozen=True)
class LedgerEvent:
    """One row of the append-only ledger."""

    id: int
    op: str
    belief_id: int | None
    related_ids: tuple[int, ...]
    before: dict[str, object] | None
    after: dict[str, object] | None
    reason: str | None
    job_id: int | None
    created_at: datetime

    @property
    def source(self) -> str | None:
        """Who made the change: the extractor named by the batch's provenance (``"rules-v1"``,
        ``"correction"``, ``"inspector"``…); None for events recorded before it was kept."""
        value = (self.after or {}).get("extractor")
        return value if isinstance(value, str) else None

    @property
    def session_id(self) -> str | None:
        """The conversation the change was made in, when its provenance named one (a turn's
        extraction, the agent's memory tools); None otherwise."""
        value = (self.after or {}).get("session_id")
        return value if isinstance(value, str) else None


@dataclass(frozen=True)
class UserSummary:
    """A user as an inspector lists them: memory version, erase tombstone, belief counts."""

    user_id: str
    version: int
    erased_at: datetime | None
    created_at: datetime
    updated_at: datetime
    """The last applied batch, erase or reinstatement."""
    beliefs: dict[str, int] = field(default_factory=dict)
    """How many beliefs the user has in each status (absent statuses: none)."""
    episodes: int = 0
    """How many of the user's episodes recall can quote (hidden ones not counted)."""
    timezone: str | None = None
    """The IANA zone the user's sessions last gave (None: none did; dates are UTC)."""

    @property
    def erased(self) -> bool:
        return self.erased_at is not None

    @property
    def active(self) -> int:
        return self.beliefs.get("active", 0)

    @property
    def total(self) -> int:
        return sum(self.beliefs.values())


@dataclass(frozen=True)
class Change:
    """The effect of one applied op.

    ``op`` is what happened: an ADD that restated an active belief is reported as
    ``CONFIRM`` with ``belief_id`` the confirmed belief. An op of a turn said before its
    target was last said (engine/late.py) leaves the target active: ``HISTORY``, its
    statement kept as the target's history (``belief_id``), or ``KEPT`` (nothing written).
    ``replaced`` lists the beliefs that stopped being active (the SUPERSEDE target, the
    MERGE sources).
    """

    op: str
    belief_id: int
    replaced: tuple[int, ...] = ()


@dataclass(frozen=True)
class ApplyResult:
    """What a batch changed, and the user's memory version after it."""

    changes: tuple[Change, ...]
    user_version: int


@dataclass(frozen=True)
class TranscriptsErased:
    """What an erase deleted from one transcript store (a SQLite file of the SDK's)."""

    store: str
    conversations: int
    messages: int
    problem: str | None = None
    """Why the store could not be cleaned, or not wholly (None: it was)."""


@dataclass(frozen=True)
class EraseReceipt:
    """Proof of an erase: rows deleted per table (and, when asked for, the user's
    conversations deleted from the transcript stores the library made)."""

    user_id: str
    erased_at: datetime
    deleted: dict[str, int]
    transcripts: tuple[TranscriptsErased, ...] = ()

    @property
    def total(self) -> int:
        return sum(self.deleted.values())


@dataclass(frozen=True)
class ReembedReport:
    """What a re-embedding run found and converted."""

    model: str
    found: int  # beliefs and episodes of another model when the run began
    converted: int
    skipped: int  # revised by someone else while this run embedded them


@dataclass(frozen=True)
class ScoredBelief:
    """A recalled belief with its fused score (and per-signal scores with ``explain``)."""

    belief: Belief
    score: float
    signals: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class ScoredEpisode:
    """A recalled episode with its fused score (and per-signal scores with ``explain``)."""

    episode: Episode
    score: float
    signals: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class RecallResult:
    """The read path's answer: ranked beliefs packed into a rendered memory block.

    The beliefs carry their latest sources only when the request's block shows them
    (``provenance`` ``"brief"`` or ``"quote"``) or asks to ``explain``; otherwise their
    ``sources`` are empty (``BeliefEngine.search`` and ``history`` always read them).
    """

    beliefs: tuple[ScoredBelief, ...]
    text: str
    tokens: int
    tokenizer: str
    max_tokens: int
    candidates: int
    latency_ms: float
    stale: bool = False
    other_model_candidates: int = 0
    """Candidates whose vectors another embedding model made: they were found by full
    text only (``mem01session reembed`` converts them)."""
    episodes: tuple[ScoredEpisode, ...] = ()
    """The episodes in the block, best first (they are rendered by date)."""
    waited_ms: float = 0.0
    """How long the recall waited for the user's queued turns (a session's run or
    ``recall``; 0 when nothing was waited for)."""
    pending_turns: int = 0
    """The user's turns still queued for extraction that the records do not reflect and
    that were not waited for (the block says so)."""
    pending_quoted: int = 0
    """Those of :attr:`pending_turns` whose words the block quotes (a run's block: the
    newest that fit)."""

    @property
    def empty(self) -> bool:
        return not self.beliefs and not self.episodes
