"""``tests/engine/test_erase.py`` on a database distributed by user_id."""

from tests.citus.reuse import reuse
from tests.engine import test_erase
from tests.engine.conftest import engine

__all__ = ["engine"]  # the fixture the reused tests ask for (where they do not define one)

reuse(test_erase, globals())
