"""Short-term memory strategies: trimming, summarizing, and per-chat session management.

Each one is an Agents SDK :class:`~agents.memory.Session` that wraps another session, so
they compose with each other and with :class:`mem01session.Mem01Session`.
"""

from .managed import ManagedSession, SessionKey, SessionRecord
from .manager import SessionFactory, SessionManager, mem01_session_factory, plain_factory
from .summarizers import OfflineSummarizer, OpenAISummarizer, Summarizer, render_transcript
from .summarizing import SUMMARY_PROMPT, SessionItem, SummarizingSession
from .trimming import TrimmingSession

__all__ = [
    "SUMMARY_PROMPT",
    "ManagedSession",
    "OfflineSummarizer",
    "OpenAISummarizer",
    "SessionFactory",
    "SessionItem",
    "SessionKey",
    "SessionManager",
    "SessionRecord",
    "Summarizer",
    "SummarizingSession",
    "TrimmingSession",
    "mem01_session_factory",
    "plain_factory",
    "render_transcript",
]
