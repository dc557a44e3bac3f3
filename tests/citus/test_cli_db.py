"""``tests/test_cli_db.py`` (``mem01session db upgrade|current|check|downgrade``) on a
Citus coordinator."""

from tests import test_cli_db
from tests.citus.reuse import reuse

reuse(test_cli_db, globals())
