"""What memory adds to the Agents SDK's traces, and the traces of extraction jobs.

In the trace of a run (the SDK's own, when tracing is on), two custom spans:

* ``mem01.recall``: the recall that gave the run's model input its memory block:
  ``tokens`` (of ``max_tokens``), ``beliefs`` and ``episodes`` packed, ``candidates``,
  ``waited_ms`` (the barrier: an explicit recall waiting for the user's earlier turns to be
  extracted; a run never waits), ``read_ms`` (the engine's read), ``pending_turns`` (the
  user's turns still queued elsewhere) and ``pending_quoted`` (those whose words the block
  quotes), ``stale`` (some of them are neither in the notes nor quoted), ``available``
  (false when memory could not be reached). With the run's
  ``RunConfig.trace_include_sensitive_data`` (the SDK's default) also the ``query`` and the
  ``block``; without it, figures only.
* ``mem01.enqueue``: the turn handed to the durable queue once its answer is stored:
  ``job_ids`` (the jobs made, as the extraction traces name them) and ``unsent_turns``
  (turns waiting in memory because the database could not take them). No text.

An extraction job, run later by the worker outside any run, gets a trace of its own
(workflow ``mem01session extraction``, metadata ``job_id``) with one span,
``mem01.extract``: ``job_id``, ``extractor``, ``attempt``, ``ops`` and ``kinds`` (how many
ops of each kind were applied), ``outcome`` (``done``, ``failed``, ``lost``), ``error``
(the failure's kind, never its message) and ``duration_ms``. It never carries user text,
the user id or the conversation: no ``RunConfig`` governs a job, and the turn it reads was
said in a run whose setting is not known by then, so the worker takes the strict reading.

Nothing is recorded outside a trace, and nothing in a process that has not imported the
Agents SDK (no application there could have set tracing up); this module imports the
SDK's tracing only when it is already loaded. Errors are recorded by their kind only.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .engine.records import RecallResult

RECALL = "mem01.recall"
ENQUEUE = "mem01.enqueue"
EXTRACT = "mem01.extract"
JOB_WORKFLOW = "mem01session extraction"

Data = dict[str, Any]
"""A span's data: filled in by the code it measures, exported when the span ends."""


def _sdk_loaded() -> bool:
    return "agents" in sys.modules


@contextmanager
def _span(name: str, data: Data) -> Iterator[Data]:
    """A custom span under the current trace (nothing outside one); yields its data."""
    if not _sdk_loaded():
        yield data
        return
    from agents.tracing import custom_span, get_current_trace

    if get_current_trace() is None:
        yield data
        return
    span = custom_span(name, data)
    started = time.perf_counter()
    with span:
        recorded: Data = span.span_data.data
        try:
            yield recorded
        except BaseException as exc:
            span.set_error({"message": type(exc).__name__, "data": None})
            raise
        finally:
            recorded["duration_ms"] = round((time.perf_counter() - started) * 1000, 1)


# -- a run's spans -----------------------------------------------------------------------


@contextmanager
def recall_span() -> Iterator[Data]:
    """The span of a run's recall; :func:`recalled` fills it in."""
    with _span(RECALL, {}) as data:
        yield data


def recalled(
    data: Data,
    result: RecallResult | None,
    *,
    waited_ms: float,
    query: str,
    sensitive: bool,
) -> None:
    """Record a recall's figures (and, when ``sensitive`` data may be traced, its query and
    block) in ``data``. ``result`` None: memory was unavailable."""
    if result is None:
        data["available"] = False
        return
    data.update(
        available=True,
        tokens=result.tokens,
        max_tokens=result.max_tokens,
        beliefs=len(result.beliefs),
        episodes=len(result.episodes),
        candidates=result.candidates,
        waited_ms=round(waited_ms, 1),
        read_ms=round(result.latency_ms, 1),
        pending_turns=result.pending_turns,
        pending_quoted=result.pending_quoted,
        stale=result.stale,
    )
    if sensitive:
        data.update(query=query, block=result.text)


@contextmanager
def enqueue_span(roles: Sequence[str]) -> Iterator[Data]:
    """The span of handing a turn to the queue: only when ``roles`` (the messages being
    stored) complete a turn; a run's input alone is held until its answer."""
    if "assistant" not in roles:
        yield {}
        return
    with _span(ENQUEUE, {}) as data:
        yield data


# -- a job's trace -----------------------------------------------------------------------


@contextmanager
def job_trace(job_id: int, extractor: str, attempt: int) -> Iterator[Data]:
    """A trace of its own for one extraction job, whatever context the worker runs in
    (its task may have been started inside a run: that trace is not the job's)."""
    if not _sdk_loaded():
        yield {}
        return
    from agents.tracing import trace
    from agents.tracing.scope import Scope

    trace_token = Scope.set_current_trace(None)
    span_token = Scope.set_current_span(None)
    try:
        with trace(JOB_WORKFLOW, metadata={"job_id": str(job_id)}):
            first = {"job_id": job_id, "extractor": extractor, "attempt": attempt}
            with _span(EXTRACT, first) as data:
                yield data
    finally:
        Scope.reset_current_span(span_token)
        Scope.reset_current_trace(trace_token)


def job_note(**fields: Any) -> None:
    """Add ``fields`` to the span of the job being processed (nothing outside one)."""
    if not _sdk_loaded():
        return
    from agents.tracing import CustomSpanData, get_current_span

    span = get_current_span()
    if span is not None:
        data = span.span_data
        if isinstance(data, CustomSpanData) and data.name == EXTRACT:
            data.data.update(fields)


def op_kinds(kinds: Sequence[str]) -> dict[str, int]:
    """How many ops of each kind: ``{"ADD": 2, "SUPERSEDE": 1}``."""
    counts: dict[str, int] = {}
    for kind in kinds:
        counts[kind] = counts.get(kind, 0) + 1
    return counts


__all__ = [
    "ENQUEUE",
    "EXTRACT",
    "JOB_WORKFLOW",
    "RECALL",
    "enqueue_span",
    "job_note",
    "job_trace",
    "recall_span",
    "recalled",
]
