"""The belief engine: the long-term tier.

Write path (:mod:`.write`, :mod:`.validate`, :mod:`.batch`): validate a batch of lifecycle
ops, then apply it atomically under the user's advisory lock, with ledger and provenance.
Read path (:mod:`.read`, :mod:`.scoring`, :mod:`.render`): hybrid candidates (vector +
full text, exact within the user's rows), fused scoring, near-duplicate suppression,
token-budgeted rendering. :mod:`.records` and :mod:`.ops` hold the types it takes and returns.
"""

from .core import BeliefEngine
from .ops import Op, Provenance
from .read import SnapshotProbe
from .records import (
    ApplyResult,
    Belief,
    Change,
    EraseReceipt,
    LedgerEvent,
    RecallRequest,
    RecallResult,
    ScoredBelief,
    Source,
    UserSummary,
)
from .write import TransactionHook

__all__ = [
    "ApplyResult",
    "Belief",
    "BeliefEngine",
    "Change",
    "EraseReceipt",
    "LedgerEvent",
    "Op",
    "Provenance",
    "RecallRequest",
    "RecallResult",
    "ScoredBelief",
    "SnapshotProbe",
    "Source",
    "TransactionHook",
    "UserSummary",
]
