"""Belief extraction: turn text -> lifecycle ops."""

from .base import Candidate, Extraction, Extractor, Turn, TurnMessage

__all__ = ["Candidate", "Extraction", "Extractor", "Turn", "TurnMessage"]
