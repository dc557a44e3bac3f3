"""Opening the configured database as ``Memory`` opens it: with the configured embedder
(whose model and dimension a database created here records), migrating an embedded one.

Used by :mod:`._engine` (every command on the engine) and by :mod:`._reads` when the
database is not at this library's schema revision. Imported inside functions: it loads
SQLAlchemy and the embedders.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from ..db import Database
from ..embeddings import Embedder, default_embedder

if TYPE_CHECKING:
    from ..config import Settings


@asynccontextmanager
async def opened(
    settings: Settings, url: str, embedded: bool
) -> AsyncIterator[tuple[Database, Embedder]]:
    """The database at ``url`` (``embedded``: the embedded server's, migrated on opening)
    and the configured embedder, closed on the way out."""
    embedder = default_embedder(settings)
    try:
        db = await Database.open(
            None if embedded else url,  # embedded: opened (and migrated) by home
            home=settings.home,
            embedding_model=embedder.name,
            embedding_dim=embedder.dim,
        )
        try:
            yield db, embedder
        finally:
            await db.close()
    finally:
        close = getattr(embedder, "aclose", None)  # a server's embedder: its client
        if close is not None:
            with contextlib.suppress(Exception):
                await close()
