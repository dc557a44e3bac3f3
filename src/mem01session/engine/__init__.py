"""The belief engine: the long-term tier.

Write path (:mod:`.write`): validate a batch of lifecycle ops, then apply it atomically
under the user's advisory lock, with ledger and provenance rows.
Read path (:mod:`.recall`): hybrid candidates (vector + full text, exact within the
user's rows), fused scoring, near-duplicate suppression, token-budgeted rendering.
"""

from .core import BeliefEngine, TransactionHook

__all__ = ["BeliefEngine", "TransactionHook"]
