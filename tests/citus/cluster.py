"""The Citus cluster the ``citus`` tests run on, and fresh distributed databases on it.

``MEM01_CITUS_URL`` is the coordinator's URL (``scripts/citus-cluster.sh up`` prints it),
pointing at a database whose ``pg_dist_node`` lists the workers. Each test database is
created on every node (Citus keeps its metadata per database), gets the ``citus`` and
``vector`` extensions everywhere, registers the same nodes, and uses few shards
(:data:`SHARDS`) so that schema changes stay quick. The workers are reached with the
coordinator URL's user and password.
"""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import psycopg
import pytest
from psycopg.conninfo import make_conninfo

from tests.pg import with_database

CITUS_URL = os.environ.get("MEM01_CITUS_URL", "")
SHARDS = 4
REASON = "MEM01_CITUS_URL is not set (a Citus coordinator: scripts/citus-cluster.sh up)"


def require_cluster() -> None:
    """Skip the calling test module (all of it, with the reason) when there is no cluster."""
    if not CITUS_URL:
        pytest.skip(REASON, allow_module_level=True)


@dataclass(frozen=True)
class Node:
    host: str
    port: int
    group: int


def nodes(admin_url: str) -> list[Node]:
    """The coordinator (group 0) and the active primary workers, as registered."""
    with psycopg.connect(admin_url) as conn:
        rows = conn.execute(
            "SELECT nodename, nodeport, groupid FROM pg_dist_node "
            "WHERE noderole = 'primary' AND isactive ORDER BY groupid"
        ).fetchall()
    found = [Node(str(h), int(p), int(g)) for h, p, g in rows]
    if not any(n.group == 0 for n in found):
        parts = urlsplit(admin_url)
        found.insert(0, Node(parts.hostname or "localhost", parts.port or 5432, 0))
    if len(found) < 2:
        raise RuntimeError(f"no worker is registered in {urlsplit(admin_url).path[1:]!r}")
    return found


def _on(admin_url: str, node: Node, dbname: str) -> str:
    return make_conninfo(admin_url, host=node.host, port=node.port, dbname=dbname)


def create_database(admin_url: str, *, shards: int = SHARDS) -> str:
    """A new empty database on every node of the cluster, Citus set up in it; its name."""
    cluster = nodes(admin_url)
    name = f"c_{uuid.uuid4().hex[:12]}"
    for node in cluster:
        with psycopg.connect(_on(admin_url, node, "postgres"), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
    for node in reversed(cluster):  # workers first: the coordinator then finds them ready
        with psycopg.connect(_on(admin_url, node, name), autocommit=True) as conn:
            conn.execute("CREATE EXTENSION citus")
            conn.execute("CREATE EXTENSION vector")
    coordinator, workers = cluster[0], cluster[1:]
    with psycopg.connect(_on(admin_url, coordinator, name), autocommit=True) as conn:
        conn.execute(f'ALTER DATABASE "{name}" SET citus.shard_count = {int(shards)}')
        conn.execute(
            "SELECT citus_set_coordinator_host(%s, %s)", (coordinator.host, coordinator.port)
        )
        for worker in workers:
            _add_node(conn, worker)
    return name


def _add_node(conn: psycopg.Connection[Any], worker: Node, attempts: int = 3) -> None:
    """``citus_add_node``, again when the coordinator's connection to the worker failed
    ("failure on connection marked as essential"): with databases made and dropped by the
    dozen it now and then does, at setup, before any code under test ran. The call is one
    transaction; a failed one added nothing."""
    for attempt in range(attempts):
        try:
            conn.execute("SELECT citus_add_node(%s, %s)", (worker.host, worker.port))
            return
        except psycopg.errors.InternalError as exc:
            if "marked as essential" not in str(exc) or attempt == attempts - 1:
                raise


def drop_database(admin_url: str, name: str) -> None:
    for node in nodes(admin_url):
        with psycopg.connect(_on(admin_url, node, "postgres"), autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def database_url(admin_url: str, name: str) -> str:
    return with_database(admin_url, name)
