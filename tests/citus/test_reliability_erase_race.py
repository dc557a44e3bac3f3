"""``tests/reliability/test_erase_race.py`` on a database distributed by user_id."""

from tests.citus.reuse import reuse
from tests.reliability import test_erase_race
from tests.session.conftest import engine

__all__ = ["engine"]  # the fixture the reused tests ask for (where they do not define one)

reuse(test_erase_race, globals())
