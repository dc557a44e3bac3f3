"""PostgreSQL access: the async handle, schema, migrations and the embedded server."""

from .database import Database, SchemaInfo

__all__ = ["Database", "SchemaInfo"]
