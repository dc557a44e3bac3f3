"""The belief engine: the long-term tier, beliefs and episodes.

Write path (:mod:`.write`, :mod:`.validate`, :mod:`.batch`, :mod:`.episodes`): validate a
batch of lifecycle ops, then apply it atomically under the user's advisory lock, with
ledger and provenance, beside the turn's episodes (what was said, verbatim).
Read path (:mod:`.read`, :mod:`.scoring`, :mod:`.render`): hybrid candidates (vector +
full text, exact within the user's rows) over beliefs and episodes, fused scoring,
near-duplicate suppression, token-budgeted rendering. :mod:`.records` and :mod:`.ops` hold
the types it takes and returns.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_names

if TYPE_CHECKING:
    from .belief_engine import BeliefEngine
    from .episodes import EpisodePolicy, Utterance
    from .ops import Op, Provenance
    from .read import SnapshotProbe
    from .records import (
        ApplyResult,
        Belief,
        Change,
        Episode,
        EraseReceipt,
        LedgerEvent,
        RecallRequest,
        RecallResult,
        ScoredBelief,
        ScoredEpisode,
        Source,
        UserSummary,
    )
    from .write import TransactionHook

# Each public name and its module. They are imported on first use (PEP 562), so that a
# module of this package that needs no database statement (``records``, ``rows``: what
# the inspector commands render) loads without the rest, which imports SQLAlchemy.
_HOMES = {
    "ApplyResult": ".records",
    "Belief": ".records",
    "BeliefEngine": ".belief_engine",
    "Change": ".records",
    "Episode": ".records",
    "EpisodePolicy": ".episodes",
    "EraseReceipt": ".records",
    "LedgerEvent": ".records",
    "Op": ".ops",
    "Provenance": ".ops",
    "RecallRequest": ".records",
    "RecallResult": ".records",
    "ScoredBelief": ".records",
    "ScoredEpisode": ".records",
    "SnapshotProbe": ".read",
    "Source": ".records",
    "TransactionHook": ".write",
    "UserSummary": ".records",
    "Utterance": ".episodes",
}

__all__ = [
    "ApplyResult",
    "Belief",
    "BeliefEngine",
    "Change",
    "Episode",
    "EpisodePolicy",
    "EraseReceipt",
    "LedgerEvent",
    "Op",
    "Provenance",
    "RecallRequest",
    "RecallResult",
    "ScoredBelief",
    "ScoredEpisode",
    "SnapshotProbe",
    "Source",
    "TransactionHook",
    "UserSummary",
    "Utterance",
]


__getattr__, __dir__ = lazy_names(__name__, _HOMES, globals())
