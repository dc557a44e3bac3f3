"""What governs a worker: leases, retries, timeouts and the bound on jobs at once, and
what an extractor may state about the last two."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from ..checks import check_flag, check_positive_int, check_seconds
from ..errors import ConfigError

# Jobs at once for an extractor that states nothing: as many model calls at once.
DEFAULT_CONCURRENCY = 8


@dataclass(frozen=True)
class WorkerPolicy:
    """Leases, retries, timeouts and concurrency of the worker.

    ``extract_timeout``: seconds one extraction may take; None takes the extractor's own
    ``timeout`` if it states one (``OpenAIExtractor`` does: ``MEM01_LLM_TIMEOUT``), else
    what a ``Memory``'s settings say (``MEM01_LLM_TIMEOUT``), else 60.
    ``concurrency``: jobs of different users processed at once; None takes the
    extractor's own ``concurrency`` if it states one (the offline :class:`RuleExtractor`
    does: 64, its extractions cost no model call), else 8 (model calls at once).
    ``yield_to_runs``: before a step, the worker waits while a run of its process recalls
    or enqueues (:mod:`.foreground`), until a job's turn was queued this many seconds ago
    (a claim: at most this long); 0: it never waits.
    ``listen``: keep a connection listening for the turns that processes without a worker
    queue (:mod:`.notify`), so they are claimed at once rather than at the next poll.
    ``skip_small_talk``: a turn whose user words are small talk (greetings, thanks, praise,
    questions back: :mod:`~mem01session.engine.small_talk`) and answer no question is not
    sent to the extractor (no model call: it states nothing to remember); its words are
    kept as episodes all the same.
    """

    lease: timedelta = timedelta(seconds=120)
    max_attempts: int = 3
    backoff_base: float = 2.0
    backoff_max: float = 30.0
    extract_timeout: float | None = None
    poll_interval: float = 1.0
    candidates: int = 10
    keyed: int = 30  # 0: candidates from search only
    concurrency: int | None = None
    yield_to_runs: float = 0.25
    listen: bool = False
    skip_small_talk: bool = True

    def __post_init__(self) -> None:
        if not isinstance(self.lease, timedelta) or self.lease <= timedelta(0):
            raise ConfigError(f"lease must be a positive timedelta, got {self.lease!r}")
        check_positive_int("max_attempts", self.max_attempts)
        if self.concurrency is not None:
            check_positive_int("concurrency", self.concurrency)
        check_positive_int("candidates", self.candidates, minimum=0)
        check_positive_int("keyed", self.keyed, minimum=0)
        check_seconds("backoff_max", self.backoff_max)
        check_seconds("yield_to_runs", self.yield_to_runs)
        # Zero would make a worker poll (or back off) without pause.
        for name in ("backoff_base", "poll_interval", "extract_timeout"):
            value = getattr(self, name)
            if name == "extract_timeout" and value is None:
                continue
            if not check_seconds(name, value):
                raise ConfigError(f"{name} must be more than 0 seconds, got {value!r}")
        check_flag("listen", self.listen)
        check_flag("skip_small_talk", self.skip_small_talk)

    def backoff(self, attempts: int) -> float:
        """Seconds before the next try of a job that failed its ``attempts``-th time."""
        return float(min(self.backoff_max, self.backoff_base**attempts))


def declared_timeout(extractor: object) -> float | None:
    """The ``timeout`` (seconds) an extractor says its calls take at most, if it says."""
    value = getattr(extractor, "timeout", None)
    if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
        return float(value)
    return None


def declared_concurrency(extractor: object) -> int | None:
    """How many extractions at once an extractor says suit it, if it says."""
    value = getattr(extractor, "concurrency", None)
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return None


__all__ = ["DEFAULT_CONCURRENCY", "WorkerPolicy", "declared_concurrency", "declared_timeout"]
