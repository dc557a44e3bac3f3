"""Erasing a user: :class:`~mem01session.memory.Memory`'s verbs for deletion requests.

:meth:`ErasureVerbs.erase` hard-deletes the user's durable memory in one transaction (and,
when asked, their conversations in the transcript stores the library made:
:mod:`.transcripts`); :meth:`ErasureVerbs.compact` makes the database's files forget the
deleted rows; :meth:`ErasureVerbs.reinstate` lifts the erase's refusal of new writes.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from ..checks import check_flag, check_id, check_seconds
from ..engine import BeliefEngine
from ..engine.records import EraseReceipt
from ..queue import JobStore
from ..queue.progress import fetch_progress
from .transcripts import erase_conversations, stores_under

if TYPE_CHECKING:
    from .runtime import Runtime

T = TypeVar("T")


class ErasureVerbs:
    """Erase, compact, reinstate (see the module docstring); ``Memory`` is one."""

    _runtime: Runtime

    if TYPE_CHECKING:  # MemoryVerbs's: every verb's time bound

        async def _bounded(self, work: Callable[[BeliefEngine, JobStore], Awaitable[T]]) -> T: ...

    async def erase(
        self,
        user_id: str,
        *,
        reinstate: bool = False,
        timeout: float | None = 30.0,
        transcripts: bool = False,
    ) -> EraseReceipt:
        """Hard-delete the user's durable memory (beliefs, episodes, ledger, provenance,
        jobs, vectors) in one transaction, and return a receipt.

        With ``transcripts``, the user's conversations are deleted as well from the
        transcript stores the library made under the memory's home folder
        (:mod:`.transcripts`: a session's default store, the demo's, a SessionManager's
        there), overwritten on disk; the receipt's ``transcripts`` says what each store
        lost. Without it (the default) transcripts are untouched: they are the
        application's (a session's ``inner`` store may be anywhere).

        The erased user's later turns are refused until :meth:`reinstate`, so that nothing
        in flight writes them back. With ``reinstate=True`` (a user who asks to start over)
        the turns already accepted are applied first (at most ``timeout`` seconds; the
        sessions of this memory drop the user's turns not yet sent), so that none of them
        comes back, and the user is reinstated at once: what they say next is remembered.
        """
        user_id = check_id("user_id", user_id)
        check_flag("reinstate", reinstate)
        seconds = check_seconds("timeout", timeout, allow_none=True)
        engine = await self._runtime.engine()
        if reinstate:
            for session in self._runtime.sessions_of(user_id):
                session.erasing()
            await self._settle(engine, user_id, seconds)
        check_flag("transcripts", transcripts)
        conversations = await conversations_of(engine, user_id) if transcripts else []
        receipt = await engine.erase_user(user_id)
        if transcripts:
            stores = stores_under(Path(self._runtime.settings.home))
            erased = await asyncio.to_thread(erase_conversations, stores, user_id, conversations)
            receipt = replace(receipt, transcripts=erased)
        if reinstate:
            await engine.reinstate_user(user_id)
        return receipt

    async def compact(self) -> list[str]:
        """Rewrite the memory tables so that the database's files no longer hold erased
        rows, and checkpoint (locks each table while it is rewritten; returns the tables).
        Without it an erase leaves the deleted bytes until PostgreSQL reuses the space."""
        return await (await self._runtime.engine()).compact()

    async def reinstate(self, user_id: str) -> datetime | None:
        """Accept writes for an erased user again; when the lifted erase happened (None:
        the user was not erased). The erased memory does not come back."""
        user_id = check_id("user_id", user_id)
        return await self._bounded(lambda engine, _: engine.reinstate_user(user_id))

    async def _settle(self, engine: BeliefEngine, user_id: str, seconds: float | None) -> None:
        """Wait (at most ``seconds``) for the user's turns accepted so far to be applied."""
        until = None if seconds is None else time.monotonic() + seconds
        progress = await fetch_progress(engine.db, user_id, [])
        if progress.unfinished:
            worker = await self._runtime.worker()
            left = None if until is None else max(0.0, until - time.monotonic())
            await worker.wait_until_done(user_id, set(progress.unfinished), left)


_CONVERSATIONS = (
    "SELECT session_id FROM memory_jobs WHERE user_id = %(u)s "
    "UNION SELECT session_id FROM episodes WHERE user_id = %(u)s"
)


async def conversations_of(engine: BeliefEngine, user_id: str) -> list[str]:
    """The conversations the user's memory came from (each turn's job names its own)."""
    rows = await engine.db.direct.fetch(_CONVERSATIONS, {"u": user_id})
    return sorted(str(r["session_id"]) for r in rows)


__all__ = ["ErasureVerbs", "conversations_of"]
