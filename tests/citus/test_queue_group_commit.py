"""``tests/queue/test_group_commit.py`` on a database distributed by user_id: each turn is
written in a transaction of its own (no statement spans users' shards), with the same
outcome."""

from tests.citus.reuse import reuse
from tests.queue import test_group_commit

reuse(test_group_commit, globals())
