"""The offline rule extractor: plain English first-person statements become beliefs.

:class:`RuleExtractor` (:mod:`.extractor`) reads the user's sentences into clauses
(:mod:`.clauses`), matches them against the pattern tables (:mod:`.patterns`: facts;
:mod:`.negations`: what stopped being true; :mod:`.answers`: a short answer read with the
question before it), keeps only objects that name things (:mod:`.objects`), and words the
statements and keys from a shared vocabulary (:mod:`.vocab`).
"""

from .extractor import RuleExtractor

__all__ = ["RuleExtractor"]
