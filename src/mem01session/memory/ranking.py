"""The weights recall ranks with, for a surface that explains a score (``recall
--explain``, the browser's recall page): the engine's own, so that what they say is what
it does."""

from __future__ import annotations

from ..engine.scoring import (
    DAY_WEIGHT,
    EPISODE_FACTOR,
    INACTIVE_FACTOR,
    TEXT_WEIGHT,
    W_CONFIDENCE,
    W_RECENCY,
    Fusion,
)

__all__ = [
    "DAY_WEIGHT",
    "EPISODE_FACTOR",
    "INACTIVE_FACTOR",
    "TEXT_WEIGHT",
    "W_CONFIDENCE",
    "W_RECENCY",
    "Fusion",
]
