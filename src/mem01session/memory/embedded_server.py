"""The embedded PostgreSQL under ``MEM01_HOME``, for the operator: its URL (started if
needed), its state, and keeping it running between processes (what ``mem01session db
url|start|stop|status`` run). A ``Memory`` with no database URL starts it by itself."""

from __future__ import annotations

from ..db.embedded import ServerStatus, embedded_url, keep_running, server_status, stop_keeping

__all__ = ["ServerStatus", "embedded_url", "keep_running", "server_status", "stop_keeping"]
