"""``tests/engine/test_group.py`` on a database distributed by user_id: a group spanning
users' shards (what the worker never sends there) is still written whole or not at all."""

from tests.citus.reuse import reuse
from tests.engine import test_group

reuse(test_group, globals())
