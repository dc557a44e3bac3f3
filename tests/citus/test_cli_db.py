"""``tests/cli/test_db.py`` (``mem01session db upgrade|current|check|downgrade``) on a
Citus coordinator."""

from tests.cli import test_db as test_cli_db
from tests.citus.reuse import reuse

reuse(test_cli_db, globals())
