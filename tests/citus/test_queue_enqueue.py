"""``tests/queue/test_enqueue.py`` on a database distributed by user_id: the erased check,
the coordinator's insert and the notification as separate statements, the same outcome."""

from tests.citus.reuse import reuse
from tests.queue import test_enqueue

reuse(test_enqueue, globals())
