"""``tests/queue/test_carried.py`` on a database distributed by user_id: the vectors a turn
carries, dropped from the distributed job row by its completion."""

from tests.citus.reuse import reuse
from tests.queue import test_carried

reuse(test_carried, globals())
