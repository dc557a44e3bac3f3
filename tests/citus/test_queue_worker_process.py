"""``tests/queue/test_worker_process.py`` on a database distributed by user_id: a worker
process woken by notifications sent through the coordinator."""

from tests.citus.reuse import reuse
from tests.queue import test_worker_process

reuse(test_worker_process, globals())
