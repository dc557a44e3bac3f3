"""What the pages show, read through the memory's verbs: nothing here writes.

Every read but :func:`user_rows` is scoped to one user. An unknown user, a malformed id
or another user's belief or episode raise :class:`PageError` with the status the page
answers with.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime

from ..checks import MAX_ID_CHARS, check_id
from ..errors import BeliefNotFoundError, ConfigError, EpisodeNotFoundError
from ..memory import Memory
from ..memory.records import Belief, Episode, JobCounts, LedgerEvent, UserSummary

MAX_BIGINT = 2**63 - 1
_EPOCH = datetime.min.replace(tzinfo=UTC)


class PageError(Exception):
    """A request the browser answers with an error page (400, 403, 404, 409…)."""

    def __init__(self, status: int, title: str, message: str, *, user: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.title = title
        self.message = message
        self.user = user


@dataclass(frozen=True)
class UserRow:
    """One line of the users page: durable memory and open jobs of one user."""

    user_id: str
    summary: UserSummary | None
    jobs: JobCounts | None

    @property
    def last_activity(self) -> datetime | None:
        moments = [
            m
            for m in (self.summary and self.summary.updated_at, self.jobs and self.jobs.updated_at)
            if m
        ]
        return max(moments, default=None)

    @property
    def erased(self) -> bool:
        return self.summary is not None and self.summary.erased


@dataclass(frozen=True)
class UserView:
    """A known user: their summary (None when only jobs exist yet) and job counts."""

    user_id: str
    summary: UserSummary | None
    jobs: JobCounts

    @property
    def erased(self) -> bool:
        return self.summary is not None and self.summary.erased

    @property
    def timezone(self) -> str | None:
        """The zone the user's sessions last gave (None: UTC)."""
        return self.summary.timezone if self.summary is not None else None


async def user_rows(memory: Memory, contains: str | None, limit: int) -> tuple[list[UserRow], bool]:
    """Users with memory or open jobs, most recent activity first; and whether more exist."""
    summaries = {s.user_id: s for s in await memory.users(contains=contains, limit=limit + 1)}
    more = len(summaries) > limit
    open_jobs = await memory.open_jobs(contains=contains)
    rows = [UserRow(u, summaries.get(u), open_jobs.get(u)) for u in {*summaries, *open_jobs}]
    rows.sort(key=lambda r: (r.last_activity or _EPOCH, r.user_id), reverse=True)
    return rows[:limit], more or len(rows) > limit


def user_id(value: str | None) -> str:
    """The ``u`` parameter: a user id as the library accepts it, else 400."""
    if value is None or not value.strip():
        raise PageError(400, "No user given", "This page needs a user id (the u parameter).")
    try:
        return check_id("user id", value)
    except ConfigError as exc:
        shown = value if len(value) <= MAX_ID_CHARS else value[:40] + "…"
        raise PageError(400, "Not a user id", f"{shown!r}: {exc}") from None


def conversation_id(value: str | None, *, user: str | None = None) -> str | None:
    """The ``c`` parameter: a conversation (session) id, None when missing or blank, else
    400 when the library would refuse it."""
    if value is None or not value.strip():
        return None
    try:
        return check_id("conversation id", value)
    except ConfigError as exc:
        shown = value if len(value) <= MAX_ID_CHARS else value[:40] + "…"
        raise PageError(400, "Not a conversation id", f"{shown!r}: {exc}", user=user) from None


def record_id(value: str | None, what: str = "belief", *, user: str | None = None) -> int:
    """A positive integer id from a parameter, else 400."""
    text = (value or "").strip().lstrip("#")
    if not text.isascii() or not text.isdigit() or not 1 <= int(text) <= MAX_BIGINT:
        shown = (value or "")[:40]
        a = "an" if what[:1] in ("a", "e", "i", "o", "u") else "a"
        raise PageError(
            400,
            f"Not {a} {what} id",
            f"{a.capitalize()} {what} id is a positive integer, got {shown!r}.",
            user=user,
        )
    return int(text)


async def known_user(memory: Memory, user: str) -> UserView:
    """The user, if anything durable was ever recorded for them (an erased user is known)."""
    summary = await memory.user(user)
    counts = await memory.job_counts(user)
    if summary is None and not counts.counts:
        raise PageError(404, "Unknown user", f"No memory is recorded for user {user!r}.", user=None)
    return UserView(user, summary, counts)


async def belief_of(memory: Memory, user: str, belief_id: int) -> Belief:
    """The user's belief; another user's id answers exactly like a missing one."""
    try:
        return await memory.belief(user, belief_id)
    except BeliefNotFoundError:
        raise PageError(
            404, "Unknown belief", f"User {user!r} has no belief #{belief_id}.", user=user
        ) from None


MAX_VERSIONS = 25
"""How many linked beliefs (supersede and merge chains) a belief page follows."""

REPLACING_OPS = ("SUPERSEDE", "CORRECT", "MERGE")


@dataclass(frozen=True)
class BeliefHistory:
    """A belief, the versions linked to it, and the ledger events of them all.

    The versions are the beliefs reachable through supersede, correct and merge links in
    either direction (``Lives in NYC`` -> ``Lives in SF`` -> ``Lives in Oakland``), oldest
    first, this one included.
    """

    belief: Belief
    versions: list[Belief]
    events: list[LedgerEvent]
    episodes: dict[int, Episode | None] = field(default_factory=dict)
    """The episodes this belief's sources point at, in source order (None: no longer kept,
    deleted by retention)."""

    def source_of(self, event: LedgerEvent) -> str | None:
        """Who made ``event``: recorded in the ledger, else the extractor of a source written
        by the same job."""
        if event.source:
            return event.source
        if event.job_id is None:
            return None
        found = (s.extractor for b in self.versions for s in b.sources if s.job_id == event.job_id)
        return next((x for x in found if x), None)


async def belief_history(memory: Memory, user: str, belief_id: int) -> BeliefHistory:
    """The belief, its linked versions (at most :data:`MAX_VERSIONS`) and their events."""
    belief = await belief_of(memory, user, belief_id)
    versions = {belief.id: belief}
    events: dict[int, LedgerEvent] = {}
    frontier = [belief]
    while frontier:
        current = frontier.pop()
        linked: list[int] = []
        for event in await memory.history(user, belief_id=current.id, limit=500):
            events[event.id] = event
            if event.belief_id == current.id and event.op in REPLACING_OPS:
                linked.extend(event.related_ids)  # what this one replaced
        linked += [i for i in (current.superseded_by, current.merged_into) if i is not None]
        for other in dict.fromkeys(linked):
            if other in versions or len(versions) >= MAX_VERSIONS:
                continue
            try:
                found = await memory.belief(user, other)
            except BeliefNotFoundError:  # pragma: no cover - ledger ids are the user's own
                continue
            versions[other] = found
            frontier.append(found)
    ordered = sorted(versions.values(), key=lambda b: (b.valid_from, b.id))
    said = await source_episodes(memory, user, belief)
    return BeliefHistory(belief, ordered, sorted(events.values(), key=lambda e: e.id), said)


async def source_episodes(memory: Memory, user: str, belief: Belief) -> dict[int, Episode | None]:
    """The episodes ``belief`` was drawn from, by id in source order; None for one that is
    no longer kept (retention deletes episodes, the sources keep their id)."""
    found: dict[int, Episode | None] = {}
    for source in belief.sources:
        if source.episode_id is None or source.episode_id in found:
            continue
        try:
            found[source.episode_id] = await memory.episode(user, source.episode_id)
        except EpisodeNotFoundError:
            found[source.episode_id] = None
    return found


async def episode_of(memory: Memory, user: str, episode_id: int) -> Episode:
    """The user's episode; another user's id answers exactly like a missing one."""
    try:
        return await memory.episode(user, episode_id)
    except EpisodeNotFoundError:
        raise PageError(
            404, "Unknown episode", f"User {user!r} has no episode #{episode_id}.", user=user
        ) from None


async def drawn_beliefs(memory: Memory, user: str, episode: Episode) -> list[Belief]:
    """The beliefs drawn from ``episode``, in id order."""
    out: list[Belief] = []
    for belief_id in episode.belief_ids:
        try:
            out.append(await memory.belief(user, belief_id))
        except BeliefNotFoundError:  # pragma: no cover - the ids are the user's own
            continue
    return out


@dataclass(frozen=True)
class Conversation:
    """One conversation's episodes on the episodes tab, oldest first."""

    session_id: str
    episodes: list[Episode]

    @property
    def first_said(self) -> datetime:
        return self.episodes[0].said_at

    @property
    def last_said(self) -> datetime:
        return self.episodes[-1].said_at


@dataclass(frozen=True)
class EpisodeListing:
    """The episodes tab: the most recent episodes that match, by conversation (the most
    recently active first), and whether older ones match too."""

    conversations: list[Conversation]
    count: int
    more: bool


async def episode_listing(
    memory: Memory,
    user: str,
    *,
    session_id: str | None,
    contains: str | None,
    limit: int,
) -> EpisodeListing:
    """The user's ``limit`` most recent episodes (hidden ones included) that match, grouped
    by conversation."""
    found = await memory.episodes(user, session_id=session_id, contains=contains, limit=limit + 1)
    more = len(found) > limit
    if more:
        found = found[1:]  # oldest first: the one over the limit is the oldest
    return EpisodeListing(by_conversation(found), len(found), more)


def by_conversation(episodes: list[Episode]) -> list[Conversation]:
    """Episodes grouped by conversation: each group in the order said, the group with the
    most recent episode first."""
    groups: dict[str, list[Episode]] = {}
    for e in sorted(episodes, key=lambda e: (e.said_at, e.job_id, e.message, e.passage, e.id)):
        groups.setdefault(e.session_id, []).append(e)
    conversations = [Conversation(s, g) for s, g in groups.items()]
    conversations.sort(key=lambda c: (c.last_said, c.session_id), reverse=True)
    return conversations
