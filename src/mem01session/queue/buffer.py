"""Turns on their way to the durable job table.

The SDK stores a run's input before the model call and its answer after it. The input
is *held* until the answer arrives, so that one job carries the whole turn (the
extractor sees question and answer together, and runs once per turn, after the answer).
The SDK stores both from the run's own task, so runs awaited at once on one session are
told apart by their tasks: an answer completes the input of its own run, with any input
whose run ended unanswered (a run that failed); the input of other runs under way stays
held. A run's later answers (a few words beside a tool call, then the answer) go with
nothing more of other runs. An answer from a task that never stored input (items added by
hand, from another task) completes all held input.
A completed turn the database cannot take (an outage) waits in memory, in order, and is
enqueued at the next chance with its original time and an idempotency key, so a retry
after a lost commit reply enqueues it once.
"""

from __future__ import annotations

import asyncio
import uuid
import weakref
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from ..errors import UserErasedError, connection_lost
from ..logs import describe, get_logger
from .carried_vectors import Known
from .job_store import JobStore
from .turns import TurnMessage

log = get_logger(__name__)

# Completed turns kept in memory while the database cannot take them (oldest dropped).
MAX_UNSENT_TURNS = 1000


@dataclass(frozen=True, eq=False)  # each one itself, however alike
class _Held:
    """A message waiting for its answer: when it came, and the run (task) that stored it."""

    message: TurnMessage
    at: datetime
    run: weakref.ref[asyncio.Task[object]] | None

    def ended(self) -> bool:
        """Whether the run that stored it can no longer answer it."""
        task = self.run() if self.run is not None else None
        return task is None or task.done()


@dataclass(frozen=True)
class PendingTurn:
    """A completed turn waiting to be enqueued."""

    messages: tuple[TurnMessage, ...]
    observed_at: datetime
    key: str = field(default_factory=lambda: uuid.uuid4().hex)


class TurnBuffer:
    """Held input, completed turns not yet enqueued, and the enqueueing of both."""

    def __init__(self, user_id: str, session_id: str) -> None:
        self.user_id = user_id
        self.session_id = session_id
        self._held: list[_Held] = []
        # The runs (tasks) that stored a question here: their later answers are theirs alone.
        self._asked: weakref.WeakSet[asyncio.Task[object]] = weakref.WeakSet()
        self._unsent: deque[PendingTurn] = deque()
        self.dropped = 0
        # Jobs sent and not yet taken by the session: id, and the turn's first user message.
        self.enqueued: list[tuple[int, str]] = []
        # Turns refused (the failed job recording it, if any; why), not yet reported.
        self.refusals: list[tuple[int | None, str]] = []
        self._sending: tuple[weakref.ref[asyncio.AbstractEventLoop], asyncio.Lock] | None = None

    @property
    def unsent(self) -> int:
        """Completed turns not yet enqueued."""
        return len(self._unsent)

    @property
    def holding(self) -> bool:
        """Whether input is waiting for its answer."""
        return bool(self._held)

    def add(self, messages: Sequence[TurnMessage], now: datetime) -> bool:
        """Take a turn's messages, stored by the current task's run; True when they
        complete a turn (an answer is among them; see the module docstring)."""
        task = _current_task()
        run = weakref.ref(task) if task is not None else None
        self._held.extend(_Held(m, now, run) for m in messages)
        if task is not None and any(m.role == "user" for m in messages):
            self._asked.add(task)
        if not any(m.role == "assistant" for m in messages):
            return False
        own = [h for h in self._held if h.run is not None and h.run() is task]
        if task is not None and task in self._asked:  # else: all of it, as it came
            done = [h for h in self._held if h in own or h.ended()]
            self._held = [h for h in self._held if h not in done]
            self._complete(done)
        else:
            self.release()
        return True

    def release(self) -> None:
        """Treat held input as a complete turn (no answer is coming, or we are closing)."""
        held, self._held = self._held, []
        self._complete(held)

    def _complete(self, held: list[_Held]) -> None:
        if not held:
            return
        messages = tuple(h.message for h in held)
        self._unsent.append(PendingTurn(messages, min(h.at for h in held)))
        if len(self._unsent) > MAX_UNSENT_TURNS:
            self._unsent.popleft()
            self.dropped += 1
            log.warning(
                "memory: dropped the oldest unsent turn (more than %d waiting)", MAX_UNSENT_TURNS
            )

    async def send(
        self,
        jobs: JobStore,
        *,
        known: Known | None = None,
        model: str = "",
        notify: bool = False,
    ) -> None:
        """Enqueue completed turns, oldest first, adding their jobs to :attr:`enqueued`.

        A turn the database refuses for its content (not for the connection) never blocks
        the ones behind it: it is recorded as a failed job without its text, and its reason
        goes to :attr:`refusals`; a turn of an erased user is not stored at all. When the
        connection fails, the exception propagates and this turn and the rest are kept.
        ``known`` and ``model``: the vectors a turn carries to the worker (:mod:`.carried`);
        ``notify``: wake the workers of other processes with each turn (:mod:`.notify`).

        One send at a time: the runs of a session awaited at once each send from their own
        task, and a turn leaves the queue only once stored. A send that finds another under
        way waits for it, and then sends what is left (its own turn, if that one did not).
        """
        async with self._lock():
            await self._send_queued(jobs, known=known, model=model, notify=notify)

    def _lock(self) -> asyncio.Lock:
        """The send lock of the running event loop (a session may outlive a loop: each
        ``Runner.run_sync`` runs one of its own)."""
        loop = asyncio.get_running_loop()
        if self._sending is None or self._sending[0]() is not loop:
            self._sending = (weakref.ref(loop), asyncio.Lock())
        return self._sending[1]

    async def _send_queued(
        self, jobs: JobStore, *, known: Known | None, model: str, notify: bool
    ) -> None:
        while self._unsent:
            turn = self._unsent[0]
            try:
                job_id = await jobs.enqueue(
                    self.user_id,
                    self.session_id,
                    turn.messages,
                    now=turn.observed_at,
                    idempotency_key=turn.key,
                    known=known,
                    model=model,
                    notify=notify,
                )
            except UserErasedError as exc:
                self.refusals.append((None, describe(exc)))
            except Exception as exc:
                if connection_lost(exc):
                    raise
                reason = f"the turn could not be stored: {describe(exc)}"
                refused = await jobs.record_refused(
                    self.user_id,
                    self.session_id,
                    reason,
                    now=turn.observed_at,
                    idempotency_key=turn.key,
                )
                self.refusals.append((refused, reason))
            else:
                first = next((m.text for m in turn.messages if m.role == "user"), "")
                self.enqueued.append((job_id, first))
            if self._unsent and self._unsent[0] is turn:  # not dropped meanwhile (discard)
                self._unsent.popleft()

    def retract(self, message: TurnMessage) -> bool:
        """The newest held message, if it is ``message`` (same role and text), is taken back:
        the application removed it from the transcript before it was answered."""
        if not self._held:
            return False
        last = self._held[-1].message
        if (last.role, last.text) != (message.role, message.text):
            return False
        self._held.pop()
        return True

    def forget_held(self) -> None:
        """Held input is taken back: the application cleared the transcript before it was
        answered (completed turns are kept)."""
        self._held = []

    def discard(self) -> int:
        """Forget everything not yet enqueued; returns how many turns were dropped."""
        count = len(self._unsent) + (1 if self._held else 0)
        self._unsent.clear()
        self._held = []
        return count


def _current_task() -> asyncio.Task[object] | None:
    try:
        return asyncio.current_task()
    except RuntimeError:  # no running loop
        return None
