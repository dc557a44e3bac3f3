"""``tests/queue/test_prior_answer.py`` on a database distributed by user_id: a claim of
one user, its conversation's answer before it included, runs on that user's shard."""

from tests.citus.reuse import reuse
from tests.queue import test_prior_answer

reuse(test_prior_answer, globals())
