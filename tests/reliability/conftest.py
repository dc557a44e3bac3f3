"""Fixtures of the reliability suite: the session suite's (the shared machinery lives in
``harness.py``)."""

from tests.session.conftest import engine, extractor, make_session, memories, memory

__all__ = ["engine", "extractor", "make_session", "memories", "memory"]
