"""``tests/engine/test_recall_named_days.py`` on a database distributed by user_id."""

from tests.citus.reuse import reuse
from tests.engine import test_recall_named_days

reuse(test_recall_named_days, globals())
