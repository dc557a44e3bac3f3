"""The memory's tests share the session tests' scripted extractor and factories."""

from tests.session.conftest import (  # noqa: F401  (fixtures, registered by import)
    engine,
    extractor,
    make_session,
    memories,
    memory,
)
