"""``tests/engine/test_episodes.py`` on a database distributed by user_id."""

from tests.citus.reuse import reuse
from tests.engine import test_episodes

reuse(test_episodes, globals())
