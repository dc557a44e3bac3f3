"""PostgreSQL access: the async handle, schema, migrations and the embedded server.

``Database`` and ``SchemaInfo`` are imported on first use, so that a module of this
package that needs neither (``migrate``, ``embedded``: what ``mem01session db current``
uses) loads without SQLAlchemy's async layer, the pools and the vector adapters.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .database import Database, SchemaInfo

__all__ = ["Database", "SchemaInfo"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from . import database

        return getattr(database, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
