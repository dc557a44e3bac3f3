"""Run another folder's test module against the cluster.

A module here calls :func:`reuse` with a test module of the plain suite: it then holds
that module's tests, fixtures and helpers (pytest collects tests from a module's
namespace, wherever they were defined), marked ``citus``; without a cluster the whole
module is skipped, with the reason. Their database fixtures resolve against
``tests/citus/conftest.py``: fresh distributed databases instead of clones of a plain
template.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest

from tests.citus.cluster import require_cluster


def reuse(source: ModuleType, namespace: dict[str, Any]) -> None:
    require_cluster()
    for name, value in vars(source).items():
        if not name.startswith("__"):
            namespace[name] = value  # the source's own fixtures win over defaults
    marks = getattr(source, "pytestmark", [])
    namespace["pytestmark"] = [pytest.mark.citus, *(marks if isinstance(marks, list) else [marks])]
