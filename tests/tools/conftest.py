"""The session fixtures (a Memory on the test's database, sessions, a scripted extractor)
serve the tools' tests too."""

from tests.session.conftest import (  # noqa: F401  (fixtures)
    engine,
    extractor,
    make_session,
    memories,
    memory,
)
