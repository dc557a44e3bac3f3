"""``tests/cli/test_db.py`` (``mem01session db upgrade|current|check|downgrade``) on a
Citus coordinator."""

from tests.citus.reuse import reuse
from tests.cli import test_db as test_cli_db

reuse(test_cli_db, globals())
