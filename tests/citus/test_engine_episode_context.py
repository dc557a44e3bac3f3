"""``tests/engine/test_episode_context.py`` on a database distributed by user_id."""

from tests.citus.reuse import reuse
from tests.engine import test_episode_context

reuse(test_episode_context, globals())
