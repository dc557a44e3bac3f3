from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.compat.server import FakeServer
from tests.session.conftest import engine, extractor, memories  # noqa: F401  (fixtures)


@pytest.fixture(scope="session")
def compat_server() -> Iterator[FakeServer]:
    server = FakeServer()
    yield server
    server.close()


@pytest.fixture
def server(compat_server: FakeServer) -> Iterator[FakeServer]:
    """The fake server, in its default (permissive) behaviour and with nothing recorded."""
    compat_server.reset()
    yield compat_server
    compat_server.reset()
