"""The jobs one session is still waiting for, and what became of them.

A session enqueues each completed turn as a job. Until the job is seen done, the session
watches it: a run's model may read that turn in its transcript anyway (then the run waits
for nothing), a flush waits for it, and a job that ended failed is reported once, by the
session's next flush or recall.
"""

from __future__ import annotations

from collections.abc import Sequence

from .items import user_texts_newest_first

# At most this many of the conversation's latest user messages are checked against the
# quotes of a recall (older ones may come back quoted: a bound on the per-run cost).
SEEN_MESSAGES = 500


class WatchedJobs:
    """This session's jobs not yet seen done, oldest first (:attr:`ids`)."""

    def __init__(self) -> None:
        self.ids: list[int] = []
        # job id -> the turn's first user message, while the job is watched
        self._texts: dict[int, str] = {}
        self._reported: set[int] = set()  # failures reported already
        self._failed: list[str] = []  # failures since the last flush took them
        # Of the watched jobs, those whose turns the current run's model reads in its
        # transcript; and the user messages it reads there, whitespace collapsed (recall
        # does not quote them back: RecallRequest.conversation_text).
        self._visible: frozenset[int] = frozenset()
        self.seen_text = ""

    def add(self, job_id: int, user_text: str) -> None:
        """A turn of this session was enqueued as ``job_id``."""
        self.ids.append(job_id)
        self._texts[job_id] = user_text

    def refused(self, job_id: int | None, reason: str) -> None:
        """A turn was refused at enqueue (recorded as job ``job_id``, if any): reported
        there, and not again as a failed job."""
        if job_id is not None:
            self._reported.add(job_id)
        self._failed.append(reason)

    def clear(self) -> None:
        """Stop watching every job (the user was erased)."""
        self.ids.clear()
        self._texts.clear()

    def see_history(self, items: Sequence[object]) -> None:
        """The inner session returned ``items`` for a run: note which watched turns the
        model will read there (a trimming or summarizing inner session may have dropped
        some), and the user messages it reads."""
        wanted: dict[str, list[int]] = {}
        for job_id in self.ids:
            if job_id in self._texts:
                wanted.setdefault(self._texts[job_id], []).append(job_id)
        visible: list[int] = []
        seen: list[str] = []
        for text in user_texts_newest_first(items):
            visible += wanted.pop(text, [])
            if len(seen) < SEEN_MESSAGES:
                seen.append(" ".join(text.split()))
            elif not wanted:
                break
        self._visible = frozenset(visible)
        self.seen_text = "\n".join(seen)

    def visible(self) -> frozenset[int]:
        """The watched jobs whose turns the current run's model reads."""
        return self._visible.intersection(self.ids)

    def settle(
        self,
        statuses: dict[int, tuple[str, str | None]],
        failed: dict[int, str | None] | None = None,
    ) -> list[tuple[int, str]]:
        """Forget the jobs ``statuses`` (id -> status, last error) shows done or failed, and
        those it does not show. The failures not reported yet (``failed``: more of the
        user's), oldest first, each described: report each with :meth:`reported`."""
        failures = dict(failed or {})
        failures |= {i: err for i, (status, err) in statuses.items() if status == "failed"}
        self.ids = [
            i for i in self.ids if i in statuses and statuses[i][0] != "done" and i not in failures
        ]
        for job_id in set(self._texts).difference(self.ids):
            del self._texts[job_id]
        return [
            (job_id, f"job {job_id}: {last_error}")
            for job_id, last_error in sorted(failures.items())
            if job_id not in self._reported
        ]

    def reported(self, job_id: int, message: str) -> None:
        """The failure of ``job_id`` was reported (as ``message``): not again."""
        self._reported.add(job_id)
        self._failed.append(message)

    def take_failed(self) -> list[str]:
        """The failures reported since the last call (a flush's)."""
        failed, self._failed = self._failed, []
        return failed


__all__ = ["SEEN_MESSAGES", "WatchedJobs"]
