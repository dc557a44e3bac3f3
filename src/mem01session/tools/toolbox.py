"""The memory tools' operations on one user's memory, shared by every surface that offers
them: the agent's function tools (:mod:`.agent`) and the MCP server (:mod:`.mcp_server`).

Each operation is a verb of a :class:`~mem01session.memory.Memory`, whose writes go to
the engine as the extraction worker's do, never through the queue: a tool call never
waits for the worker, and its write takes the user's lock, passes the engine's validation
and lands in the ledger in one transaction.

* :meth:`MemoryToolbox.search`: the ranked recall of beliefs and episodes, rendered with
  ids (``#12`` for a belief, ``e#5`` for an episode) and dates.
* :meth:`MemoryToolbox.remember`: an ADD (an exact restatement of an active belief
  confirms it instead). With a ``key`` (``home.city``) an active belief under the same key
  saying something else is superseded by the new statement: the old one keeps its text
  and ends now, in history, as when the extractor sees a fact change.
* :meth:`MemoryToolbox.correct`: a correction (the old statement was wrong).
* :meth:`MemoryToolbox.forget`: no longer true, kept in history.

Writes pass :func:`~mem01session.extraction.hygiene.screen` first, like every op an
extractor proposes: a statement holding a secret is refused (and not quoted back), a
secret in a reason is redacted. Provenance names the surface (``agent-tool``,
``mcp-tool``), the conversation and the tool call, and the ledger records both.

What goes wrong is raised as :class:`~mem01session.errors.MemoryToolError`, whose message
is what the caller is told: a bad argument, a belief that is not an active one of this user
(another user's is reported exactly like one that does not exist), an erased user (writes
are refused until the user is reinstated), memory out of reach.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

from ..bounded import Bound
from ..checks import check_id, check_seconds
from ..errors import (
    BeliefNotFoundError,
    ConfigError,
    InvalidOpError,
    MemoryToolError,
    UserErasedError,
)
from ..extraction.hygiene import clean_text, screen
from ..logs import describe, get_logger
from ..memory import Memory
from ..memory.records import (
    DEFAULT_MAX_TOKENS,
    MAX_CONTENT_CHARS,
    MAX_KEY_CHARS,
    Belief,
    Op,
    Provenance,
    RecallRequest,
)

log = get_logger(__name__)

T = TypeVar("T")

AGENT_TOOL = "agent-tool"
"""The source the ledger and provenance record for the agent's function tools."""
MCP_TOOL = "mcp-tool"
"""The source the ledger and provenance record for the MCP server's tools."""

# What the tools say of themselves: the same words on every surface.
DESCRIPTIONS = {
    "search_memory": (
        "Search what is remembered about the user from earlier conversations: notes (each "
        "ending with its id, #12) and the user's own earlier words, with their dates. Use "
        "it when the memory you were shown does not answer, or to find the id of a note to "
        "correct or forget."
    ),
    "remember": (
        "Remember a lasting fact about the user for later conversations, when the user asks "
        "you to or states something that will matter again. Never a password, key or code: "
        "those are refused."
    ),
    "correct_memory": (
        "Fix a note that was wrong (not one that changed: for a move or a new job, remember "
        "the new fact under its key). The old statement stays in history."
    ),
    "forget_memory": (
        "Mark a note as no longer true, e.g. when the user says it is over or asks you to "
        "forget it. It leaves what you are shown and stays in history."
    ),
}
ARGUMENTS = {
    "query": 'What to look for, in words ("where does the user live", "allergies").',
    "include_history": "Also show notes that no longer hold (what was true before).",
    "statement": 'The fact as a short note about the user: "Lives in Lisbon".',
    "key": (
        "Optional dotted name of what the fact is about (home.city, job.employer, "
        "pet.name): an earlier note under the same key is replaced by this one and kept in "
        "history. Null when the fact adds to what is known."
    ),
    "id": "The note's id, as search_memory shows it (#12 -> 12).",
    "correction": "What the note should say instead.",
    "reason": 'Why, in a few words ("the user sold the car").',
    "user_id": "The user whose memory this is.",
}

NOTHING_FOUND = "Nothing remembered about the user matches this search."
SEARCH_LEGEND = (
    "(#N at the end of a note is its id, for correct_memory and forget_memory; "
    "e#N is the id of a quote of the user's own words.)"
)
ERASED = "this user's memory was erased; nothing can be written until the user is reinstated"
DEFAULT_FORGET_REASON = "no longer true, said the agent"
CALL_TIMEOUT_SECONDS = 10.0
"""How long one tool call may take (its embedding and statements; a model's run waits for
it): past that it is cut short and reported as memory out of reach."""


class MemoryToolbox:
    """The four memory tools over one user's memory in ``memory``.

    ``source`` is what provenance and the ledger name as the author (:data:`AGENT_TOOL`,
    :data:`MCP_TOOL`); ``conversation`` the conversation the calls come from (recorded as
    the provenance's ``session_id``); ``max_tokens`` the budget of a search's result;
    ``timeout`` the seconds one call may take. A malformed ``user_id`` raises
    :class:`MemoryToolError`.
    """

    def __init__(
        self,
        memory: Memory,
        user_id: str,
        *,
        source: str,
        conversation: str | None = None,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        timeout: float = CALL_TIMEOUT_SECONDS,
    ) -> None:
        try:
            checked = check_seconds("timeout", timeout)
            self.user_id = check_id("user_id", user_id)
            self.conversation = (
                None if conversation is None else check_id("conversation", conversation)
            )
            RecallRequest("", max_tokens)  # checks the budget
        except ConfigError as exc:
            raise MemoryToolError(str(exc)) from None
        self.memory = memory
        self.source = source
        self.max_tokens = max_tokens
        assert checked is not None
        self.timeout = checked

    def __repr__(self) -> str:
        return f"MemoryToolbox(user_id={self.user_id!r}, source={self.source!r})"

    # -- the tools ---------------------------------------------------------------------

    async def search(
        self, query: str, *, include_history: bool = False, timezone: str | None = None
    ) -> str:
        """What is remembered that bears on ``query`` (beliefs, then the user's dated
        words), with ids; ``include_history`` adds beliefs that no longer hold; the dates
        are days in ``timezone`` (an IANA zone; None: the one the user's sessions last
        gave, else UTC)."""
        if not isinstance(query, str):
            raise MemoryToolError("query must be a string")
        if not isinstance(include_history, bool):
            raise MemoryToolError("include_history must be true or false")
        result = await self._run(
            lambda memory: memory.recall(
                self.user_id,
                clean_text(query),
                max_tokens=self.max_tokens,
                include_history=include_history,
                provenance="quote",
                timezone=timezone,
            )
        )
        return f"{result.text}\n{SEARCH_LEGEND}" if result.text else NOTHING_FOUND

    async def remember(
        self, statement: str, *, key: str | None = None, item_ref: str | None = None
    ) -> str:
        """Store ``statement`` as a belief (see the module docstring for ``key``)."""
        content = _statement(statement)
        if key is not None and not isinstance(key, str):
            raise MemoryToolError("key must be a string or null")
        if key is not None:
            key = clean_text(key).lower() or None
        if key is not None and len(key) > MAX_KEY_CHARS:  # cut, two keys could become one
            raise MemoryToolError(
                f"key is {len(key)} characters, over the limit of {MAX_KEY_CHARS}: a key names "
                "one kind of fact (home.city); make it shorter"
            )
        op = _screened(
            Op("ADD", content=content, key=key, reason="remembered with the remember tool")
        )

        assert op.content is not None
        statement = op.content
        result = await self._run(
            lambda memory: memory.remember(
                self.user_id,
                statement,
                key=op.key,
                reason=op.reason,
                provenance=self._provenance(item_ref),
            ),
            writes=True,
        )
        change = result.changes[0]
        stored = op.content
        if change.op == "CONFIRM":
            return f"Already remembered, now confirmed (#{change.belief_id}): {stored}"
        if change.replaced:
            old = ", ".join(f"#{i}" for i in change.replaced)
            return (
                f"Remembered (#{change.belief_id}): {stored}. It replaces {old} under the "
                f"key {op.key!r}, which stays in history."
            )
        return f"Remembered (#{change.belief_id}): {stored}"

    async def correct(self, belief_id: int, statement: str, *, item_ref: str | None = None) -> str:
        """Replace what active belief ``belief_id`` says (it was wrong; kept in history)."""
        target = _belief_id(belief_id)
        content = _statement(statement)
        op = _screened(
            Op.supersede(target, content, reason="corrected with the correct_memory tool")
        )
        corrected = op.content or content  # as screened: cleaned and capped

        async def write(memory: Memory) -> int:
            current = await self._active(memory, target, "corrected")
            if current.says(corrected):
                raise MemoryToolError(f"belief #{target} already says that; nothing to correct")
            result = await memory.correct(
                self.user_id,
                target,
                corrected,
                reason=op.reason,
                provenance=self._provenance(item_ref),
            )
            return result.changes[0].belief_id

        new = await self._run(write, writes=True)
        return (
            f"Corrected: #{target} is replaced by #{new}: {corrected} "
            "(the old statement stays in history)"
        )

    async def forget(
        self, belief_id: int, reason: str | None = None, *, item_ref: str | None = None
    ) -> str:
        """Mark active belief ``belief_id`` as no longer true, saying why."""
        target = _belief_id(belief_id)
        if reason is not None and not isinstance(reason, str):
            raise MemoryToolError("reason must be a string")
        op = _screened(Op.invalidate(target, clean_text(reason or "") or DEFAULT_FORGET_REASON))

        async def write(memory: Memory) -> Belief:
            current = await self._active(memory, target, "forgotten")
            await memory.forget(
                self.user_id,
                target,
                reason=op.reason or DEFAULT_FORGET_REASON,
                provenance=self._provenance(item_ref),
            )
            return current

        current = await self._run(write, writes=True)
        return (
            f"Forgotten: #{target} ({current.content}) no longer counts as true; it stays "
            "in history."
        )

    # -- helpers -----------------------------------------------------------------------

    def _provenance(self, item_ref: str | None) -> Provenance:
        return Provenance(session_id=self.conversation, item_ref=item_ref, extractor=self.source)

    async def _active(self, memory: Memory, belief_id: int, verb: str) -> Belief:
        belief = await memory.belief(self.user_id, belief_id)  # BeliefNotFoundError
        if belief.status != "active":
            raise MemoryToolError(
                f"belief #{belief_id} is {belief.status}; only an active belief can be {verb}"
            )
        return belief

    async def _run(self, work: Callable[[Memory], Awaitable[T]], *, writes: bool = False) -> T:
        """Run ``work`` on the memory; whatever goes wrong becomes a MemoryToolError."""
        try:
            await self.memory.engine()  # opened outside the call's bound
        except Exception as exc:
            log.warning("memory tools: memory is unavailable: %s", describe(exc))
            raise MemoryToolError(f"memory is unavailable right now ({describe(exc)})") from None
        bound = Bound(self.timeout)
        try:
            return await bound.run(work(self.memory))
        except MemoryToolError:
            raise
        except UserErasedError:
            raise MemoryToolError(ERASED) from None
        except BeliefNotFoundError as exc:
            if writes and await _erased(self.memory, self.user_id):
                raise MemoryToolError(ERASED) from None
            raise MemoryToolError(str(exc)) from None
        except InvalidOpError as exc:
            raise MemoryToolError(f"not stored: {exc.reason}") from None
        except ConfigError as exc:
            raise MemoryToolError(str(exc)) from None
        except Exception as exc:
            why = bound.why(exc)
            log.warning("memory tools: a call failed: %s", why)
            raise MemoryToolError(f"memory is unavailable right now ({why})") from None


async def _erased(memory: Memory, user_id: str) -> bool:
    try:
        summary = await memory.user(user_id)
    except Exception:
        return False
    return summary is not None and summary.erased


def _statement(value: object) -> str:
    if not isinstance(value, str):
        raise MemoryToolError("statement must be a string")
    text = clean_text(value)
    if not text:
        raise MemoryToolError("statement is empty: say what to remember")
    if len(text) > MAX_CONTENT_CHARS:  # not cut short behind the caller's back
        raise MemoryToolError(
            f"statement is {len(text)} characters, over the limit of {MAX_CONTENT_CHARS}: "
            "a belief is one short fact; say it shorter"
        )
    return text


def _belief_id(value: object) -> int:
    if isinstance(value, str) and value.strip().lstrip("#").isdigit():
        value = int(value.strip().lstrip("#"))
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise MemoryToolError("id must be a belief's number, as search_memory shows it (#12)")
    return value


def _screened(op: Op) -> Op:
    """``op`` after the secret screen; a dropped op is refused without quoting it."""
    screened = screen([op])
    if not screened.ops:
        note = screened.notes[0].split(": ", 1)[-1] if screened.notes else "it was refused"
        why = note.replace("its content", "the statement")
        raise MemoryToolError(
            f"not stored: {why}. Secrets (passwords, keys, codes) are never kept in memory"
        )
    return screened.ops[0]


__all__ = ["AGENT_TOOL", "ARGUMENTS", "DESCRIPTIONS", "MCP_TOOL", "MemoryToolbox"]
