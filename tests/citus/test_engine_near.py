"""``tests/engine/test_near.py`` on a database distributed by user_id."""

from tests.citus.reuse import reuse
from tests.engine import test_near

reuse(test_near, globals())
