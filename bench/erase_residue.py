"""What an erase leaves on disk: ``python -m bench.erase_residue [--users 20] [--out FILE]``.

On a private embedded PostgreSQL (its data folder readable here): users tell facts holding
unique markers through the real write path (beliefs, episodes, jobs), every user is
erased, and each file of the data folder is searched for the markers, grouped as the
memory tables' files, the write-ahead log (``pg_wal``) and everything else; then
``BeliefEngine.compact()`` (what ``mem01session erase --compact`` runs) and later
checkpoints with ordinary writes of other users, searched again after each. Writes the
"What erase leaves on disk" section of docs/reliability.md.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from dataclasses import dataclass
from pathlib import Path

import psycopg
from sqlalchemy import text

from mem01session.db import Database, migrate
from mem01session.embeddings import HashingEmbedder
from mem01session.engine import BeliefEngine, Utterance
from mem01session.engine.ops import Op, Provenance

from .common import embedded_server
from .scrub import ROOT, write

TITLE = "What erase leaves on disk"


@dataclass
class Residue:
    """How many markers (of all written) are still found, per place."""

    tables: int = 0
    wal: int = 0
    other: int = 0


def scan(data_dir: Path, markers: list[bytes], tables: set[str]) -> Residue:
    """Markers found in the memory tables' files, in pg_wal and elsewhere (each marker
    counted once per place)."""
    found: dict[str, set[bytes]] = {"tables": set(), "wal": set(), "other": set()}
    for path in data_dir.rglob("*"):
        if not path.is_file():
            continue
        try:
            data = path.read_bytes()
        except OSError:
            continue
        hits = {m for m in markers if m in data}
        if not hits:
            continue
        rel = path.relative_to(data_dir).as_posix()
        place = "wal" if rel.startswith("pg_wal/") else "tables" if rel in tables else "other"
        found[place] |= hits
    return Residue(len(found["tables"]), len(found["wal"]), len(found["other"]))


def table_files(url: str) -> set[str]:
    """The data-folder paths of the memory tables, their TOAST tables and indexes."""
    from mem01session.db.schema import USER_TABLES

    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT pg_relation_filepath(c.oid) FROM pg_class c WHERE c.oid = ANY("
            "SELECT t.oid FROM pg_class t WHERE t.relname = ANY(%(t)s) UNION "
            "SELECT t.reltoastrelid FROM pg_class t WHERE t.relname = ANY(%(t)s) UNION "
            "SELECT i.indexrelid FROM pg_index i JOIN pg_class t ON t.oid = i.indrelid "
            "WHERE t.relname = ANY(%(t)s))",
            {"t": list(USER_TABLES)},
        ).fetchall()
    return {str(r[0]) for r in rows if r[0]}


async def tell(engine: BeliefEngine, user: str, marker: str, job: int) -> None:
    prov = Provenance(session_id=f"chat-{user}", job_id=job, extractor="bench")
    await engine.apply(
        user,
        [Op.add(f"Has a parrot called {marker}")],
        provenance=prov,
        utterances=[Utterance(0, "user", f"My parrot is called {marker}, it says hello.")],
    )
    async with engine.db.sa_engine.begin() as conn:
        await conn.execute(
            text(
                "INSERT INTO memory_jobs (user_id, session_id, payload, idempotency_key, status)"
                " VALUES (:u, 's', CAST(:p AS jsonb), :k, 'done')"
            ),
            {"u": user, "p": f'{{"messages": [{{"text": "parrot {marker}"}}]}}', "k": marker},
        )


async def run(users: int) -> list[tuple[str, Residue]]:
    with embedded_server() as server:
        url = server.database("erase_residue")
        data_dir = Path(_data_dir(url))
        emb = HashingEmbedder(64)
        migrate.upgrade(url, embedding_dim=emb.dim, embedding_model=emb.name)
        db = await Database.open(url=url, embedding_model=emb.name, embedding_dim=emb.dim)
        engine = BeliefEngine(db, emb)
        markers = [f"Qx{i:03d}Zorblax{os.getpid()}" for i in range(users)]
        try:
            for i, marker in enumerate(markers):
                await tell(engine, f"user-{i}", marker, i + 1)
            found = [m.encode() for m in markers]
            files = table_files(url)
            rows: list[tuple[str, Residue]] = []

            def look(stage: str) -> None:
                with psycopg.connect(url, autocommit=True) as conn:
                    conn.execute("CHECKPOINT")
                rows.append((stage, scan(data_dir, found, table_files(url) | files)))

            look("written")
            for i in range(users):
                await engine.erase_user(f"user-{i}")
            look("erased")
            await engine.compact()
            look("erased, then compacted")
            for round_ in range(3):  # ordinary traffic of other users, then checkpoints
                for j in range(200):
                    await tell(engine, f"other-{round_}-{j}", f"filler-{round_}-{j}", 10_000 + j)
                with psycopg.connect(url, autocommit=True) as conn:
                    conn.execute("SELECT pg_switch_wal()")
            look("compacted, then 600 turns of other users and 3 WAL switches")
        finally:
            await db.close()
    return rows


def _data_dir(url: str) -> str:
    with psycopg.connect(url) as conn:
        row = conn.execute("SHOW data_directory").fetchone()
    assert row is not None
    return str(row[0])


def section(rows: list[tuple[str, Residue]], users: int, command: str) -> str:
    lines = [
        "| stage | markers in the memory tables' files | in pg_wal | elsewhere |",
        "|---|---:|---:|---:|",
    ]
    for stage, r in rows:
        lines.append(f"| {stage} | {r.tables} of {users} | {r.wal} of {users} | {r.other} |")
    return (
        f"## {TITLE}\n\nCommand: `{command}`\n\n"
        f"{users} users each tell one fact holding a unique marker (a belief, an episode and "
        "a job row), then every one is erased; each file of the embedded server's data "
        "folder is searched for the markers after a checkpoint at each stage (a marker "
        "counts once per place).\n\n"
        + "\n".join(lines)
        + "\n\nWhat this means: after `erase`, no query finds anything of the user, but the "
        "deleted rows' bytes stay in the tables' files until PostgreSQL reuses their space, "
        "and in the write-ahead log until its segments are recycled and overwritten. "
        "`erase --compact` (`BeliefEngine.compact()`) rewrites the memory tables so their "
        "files no longer hold them; the WAL keeps them until later traffic overwrites the "
        "recycled segments (the last row), and what the filesystem, backups or replicas "
        "keep is outside the database.\n"
    )


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.erase_residue")
    ap.add_argument("--users", type=int, default=20)
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "reliability.md")
    ap.add_argument("--no-doc", action="store_true")
    args = ap.parse_args(argv)
    command = " ".join(["python -m bench.erase_residue", *(sys.argv[1:] if argv is None else argv)])
    text = section(asyncio.run(run(args.users)), args.users, command)
    print(text)
    if not args.no_doc:
        write(args.out, text, TITLE)


if __name__ == "__main__":
    main()
