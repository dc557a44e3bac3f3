"""SummarizingSession: old turns become one synthetic summary pair, recent turns stay verbatim.

When the real user turns exceed ``context_limit``, everything before the last
``keep_last_n_turns`` turns (an earlier summary included) is replaced in the inner store by a
synthetic pair: a user message :data:`SUMMARY_PROMPT` and an assistant message holding the
summary. The pair is stored with a marker key (:data:`~mem01session.shortterm._items.SYNTHETIC_KEY`)
so it survives reopening the inner session; :meth:`SummarizingSession.get_items` strips the key,
so the model only ever sees plain SDK items. :meth:`get_items_with_metadata` shows the flags.

The summarizer runs outside the lock. Its result is applied only if the prefix it summarized is
still the stored prefix (checked again under the lock, inside the SQLite transaction for a
file-backed ``SQLiteSession``), so writes made meanwhile are never lost. The replacement is one
transaction on a file-backed ``SQLiteSession``; on other sessions it is ``clear_session`` +
``add_items`` (see :mod:`~mem01session.shortterm._store`). A failing summarizer is logged and
the history stays unsummarized: the conversation goes on.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

from agents.items import TResponseInputItem
from agents.memory import Session

from ..checks import check_flag, check_items, check_limit, check_methods, check_positive_int
from ..config import Settings
from ..errors import ConfigError
from ..logs import get_logger
from ._items import limit_view, mark, strip, synthetic_kind, turn_cut, turn_starts
from ._store import read_all, rewrite
from ._wrapper import Wrapper
from .summarizers import EARLIER_SUMMARY, OfflineSummarizer, OpenAISummarizer, Summarizer

log = get_logger(__name__)

SUMMARY_PROMPT = "Summarize the conversation so far."
PROMPT_KIND = "summary_prompt"
SUMMARY_KIND = "summary"
_ATTEMPTS = 3


@dataclass(frozen=True)
class SessionItem:
    """A stored item as the model sees it, with its synthetic flag."""

    item: TResponseInputItem
    synthetic: bool
    kind: str | None = None


def default_summarizer() -> Summarizer:
    """:class:`OpenAISummarizer` when ``OPENAI_API_KEY`` is set, else :class:`OfflineSummarizer`."""
    settings = Settings.from_env()
    if settings.openai_api_key:
        return OpenAISummarizer(settings.llm_model, base_url=settings.openai_base_url)
    log.info("No OPENAI_API_KEY: SummarizingSession uses the offline summarizer")
    return OfflineSummarizer()


class SummarizingSession(Wrapper):
    """A :class:`agents.memory.Session` over ``inner`` that summarizes old turns."""

    def __init__(
        self,
        inner: Session,
        *,
        keep_last_n_turns: int = 3,
        context_limit: int = 6,
        summarizer: Summarizer | None = None,
        max_tool_output_chars: int = 1000,
        background: bool = False,
    ) -> None:
        """``background=True`` summarizes in a task instead of inside ``add_items``."""
        super().__init__(inner)
        self._context_limit = check_positive_int("context_limit", context_limit)
        self._keep = check_positive_int("keep_last_n_turns", keep_last_n_turns, minimum=0)
        if self._keep > self._context_limit:
            raise ConfigError(
                f"keep_last_n_turns ({keep_last_n_turns}) must be <= context_limit "
                f"({context_limit})"
            )
        self._max_tool_chars = check_positive_int("max_tool_output_chars", max_tool_output_chars)
        if summarizer is not None:
            check_methods("summarizer", summarizer, "a Summarizer", ("summarize",))
        self._summarizer = summarizer if summarizer is not None else default_summarizer()
        self._background = check_flag("background", background)
        self._running = False
        self._tasks: set[asyncio.Task[bool]] = set()
        self.last_error: str | None = None
        """Why the last summarization failed (None after a success)."""

    def __repr__(self) -> str:
        return (
            f"SummarizingSession(session_id={self._shown_id()!r}, "
            f"keep_last_n_turns={self._keep}, context_limit={self._context_limit}, "
            f"summarizer={self._summarizer!r})"
        )

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """Summary pair (if any) plus the verbatim turns, markers stripped."""
        limit = check_limit(limit)
        async with self._lock:
            stored = await read_all(self._inner)
        if limit is None and self.session_settings is not None:
            limit = self.session_settings.limit
        return [strip(item) for item in limit_view(stored, limit)]

    async def get_items_with_metadata(self) -> list[SessionItem]:
        """Every stored item with its synthetic flag, for inspection."""
        async with self._lock:
            stored = await read_all(self._inner)
        return [
            SessionItem(strip(item), kind is not None, kind)
            for item, kind in ((item, synthetic_kind(item)) for item in stored)
        ]

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Append ``items``; summarize the old turns when there are too many."""
        check_items(items)
        async with self._lock:
            await self._inner.add_items(items)
            due = not self._running and self._plan(await read_all(self._inner)) is not None
            if due:
                self._running = True
        if not due:
            return
        if self._background:
            task = asyncio.create_task(self._summarize_loop())
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        else:
            await self._summarize_loop()

    async def summarize_now(self) -> bool:
        """Summarize if the history is over the limit; True if a summary was applied."""
        async with self._lock:
            if self._running:
                return False
            self._running = True
        return await self._summarize_loop()

    async def wait_idle(self) -> None:
        """Wait for background summaries started so far."""
        while self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    def _plan(self, stored: list[TResponseInputItem]) -> list[TResponseInputItem] | None:
        """The prefix to summarize, or None when the history is within the limit."""
        if len(turn_starts(stored)) <= self._context_limit:
            return None
        cut = turn_cut(stored, self._keep)
        return stored[:cut] if cut else None

    async def _summarize_loop(self) -> bool:
        applied_any = False
        try:
            for _ in range(_ATTEMPTS):
                async with self._lock:
                    prefix = self._plan(await read_all(self._inner))
                if prefix is None:
                    break
                try:
                    summary = await self._summarizer.summarize(self._summarizer_input(prefix))
                except Exception as exc:  # fail-open: the transcript stays as it is
                    self.last_error = f"{type(exc).__name__}: {exc}"
                    log.warning("summarizer failed, history kept unsummarized: %s", exc)
                    break
                pair = [
                    mark({"role": "user", "content": SUMMARY_PROMPT}, PROMPT_KIND),
                    mark({"role": "assistant", "content": summary}, SUMMARY_KIND),
                ]

                def swap(
                    current: list[TResponseInputItem],
                    prefix: list[TResponseInputItem] = prefix,
                    pair: list[TResponseInputItem] = pair,
                ) -> list[TResponseInputItem] | None:
                    if current[: len(prefix)] != prefix:
                        return None  # someone rewrote the history meanwhile: plan again
                    return pair + current[len(prefix) :]

                async with self._lock:
                    if await rewrite(self._inner, swap):
                        applied_any = True
                        self.last_error = None
        finally:
            self._running = False
        return applied_any

    def _summarizer_input(self, prefix: list[TResponseInputItem]) -> list[TResponseInputItem]:
        out: list[TResponseInputItem] = []
        for item in prefix:
            kind = synthetic_kind(item)
            if kind == PROMPT_KIND:
                continue
            plain = strip(item)
            if kind == SUMMARY_KIND and isinstance(plain, Mapping):
                text = plain.get("content", "")
                plain = cast(
                    TResponseInputItem,
                    {"role": "system", "content": f"{EARLIER_SUMMARY}{text}"},
                )
            out.append(self._clip_tool_output(plain))
        return out

    def _clip_tool_output(self, item: TResponseInputItem) -> TResponseInputItem:
        if not isinstance(item, Mapping) or not str(item.get("type", "")).endswith("_output"):
            return item
        output: Any = item.get("output")
        if isinstance(output, str) and len(output) > self._max_tool_chars:
            cut = len(output) - self._max_tool_chars
            clipped = f"{output[: self._max_tool_chars]}… [{cut} more characters]"
            return cast(TResponseInputItem, {**item, "output": clipped})
        return item
