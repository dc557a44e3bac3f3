"""Memory that moves: :class:`~mem01session.memory.Memory`'s verbs for a user's data
as a document (a user's right of access and portability; moving users between
deployments; switching from mem0).

The document is JSON Lines, one record per line (its format:
:mod:`mem01session.engine.portable.document`); :meth:`PortableVerbs.export` streams it,
:meth:`PortableVerbs.import_file` writes one back, each user in a transaction of its own.

Example::

    async with Memory() as memory:
        with open("alice.jsonl", "w") as out:
            async for line in memory.export_lines(["alice"]):
                out.write(line + "\\n")
"""

from __future__ import annotations

import tempfile
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from ..checks import check_id
from ..engine.portable import export as exporting
from ..engine.portable.document import MAX_LINE_BYTES, Record, UserPart, dumps
from ..engine.portable.importing import import_file
from ..engine.portable.mem0 import convert as convert_mem0
from ..engine.portable.report import ImportReport
from ..errors import ConfigError
from ..extraction.directives import directive
from .erasing import conversations_of
from .transcripts import read_conversations, stores_under, write_conversations

if TYPE_CHECKING:
    from .runtime import Runtime

Source = Literal["mem01session", "mem0"]


class PortableVerbs:
    """Export and import (see the module docstring); ``Memory`` is one."""

    _runtime: Runtime

    async def export(
        self, user_ids: Sequence[str] | None = None, *, transcripts: bool = False
    ) -> AsyncIterator[Record]:
        """The memory document of ``user_ids`` (None: every user the database holds,
        erased ones as their tombstone), record by record, in constant memory: a header,
        then each user's memory (what they said, their beliefs with versions, sources and
        near-duplicates, the ledger), then an end record. With ``transcripts``, each user's
        conversations as well, item by item, from the transcript stores the library made
        under the memory's home folder (:mod:`.transcripts`). A user with no memory here
        is refused with ``ConfigError`` before anything is yielded."""
        engine = await self._runtime.engine()
        pool = engine.db.direct
        chosen = exporting.user_ids_of(user_ids) if user_ids is not None else None
        if chosen is not None:
            for user_id in chosen:
                if not await pool.fetch(exporting.USER_SQL, {"u": user_id}):
                    raise ConfigError(f"no memory of user {user_id!r} here")
        yield exporting.header(engine.embedder.name, engine.clock())
        users = records = 0
        ids = _each(chosen) if chosen is not None else exporting.all_user_ids(pool)
        home = Path(self._runtime.settings.home)
        stores = stores_under(home) if transcripts else []
        async for user_id in ids:
            users += 1
            async for record in exporting.export_user(pool, user_id):
                records += 1
                yield record
            if stores:
                said = await conversations_of(engine, user_id)
                for record in read_conversations(stores, user_id, said):
                    records += 1
                    yield record
        yield exporting.end(users, records)

    async def export_lines(
        self, user_ids: Sequence[str] | None = None, *, transcripts: bool = False
    ) -> AsyncIterator[str]:
        """:meth:`export`, each record as its line of JSON (without the newline)."""
        async for record in self.export(user_ids, transcripts=transcripts):
            line = dumps(record)
            if len(line) > MAX_LINE_BYTES // 4 and len(line.encode()) > MAX_LINE_BYTES:
                # Refused here, not by the import that would read it (nothing imports).
                raise ConfigError(
                    f"a {record.get('kind')} record of user {record.get('user_id')!r:.80} is "
                    f"over the {MAX_LINE_BYTES} bytes a document's line may hold"
                )
            yield line

    async def export_user(self, user_id: str) -> AsyncIterator[Record]:
        """:meth:`export` of one user."""
        async for record in self.export([check_id("user_id", user_id)]):
            yield record

    async def import_file(
        self,
        path: str | Path,
        *,
        source: Source = "mem01session",
        user_id: str | None = None,
        users: Callable[[list[UserPart]], None] | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> ImportReport:
        """Import a document (``source="mem01session"``: one :meth:`export` wrote) or the
        JSON mem0's ``get_all`` returns (``source="mem0"``: each memory becomes a belief
        whose source is mem0, dated as mem0 dated it; ``user_id`` names the user for
        memories that carry none; a memory addressed to the assistant, as the worker's
        screen reads it, is left out and listed in the report's ``left_out``).

        The whole file is checked before anything is written
        (:class:`~mem01session.errors.DocumentError` names the first bad line: a belief
        that holds a secret, or whose text is addressed to the assistant, is one); then each
        user is written in one transaction, embedded with this memory's model. A user who
        already has memory here is refused (:class:`~mem01session.errors.
        ImportConflictError`, the users before it stay imported), unless this same
        document was imported for them before: then it is skipped, so that importing
        twice changes nothing. An erased user is refused until reinstated. A document's
        transcripts (``export(..., transcripts=True)``) go to the default transcript store
        under the memory's home folder (``transcripts.sqlite``), each conversation it does
        not hold yet. ``users`` is shown the document's users once it is checked,
        ``progress`` how many records were written after each batch."""
        engine = await self._runtime.engine()
        file = Path(path)
        if source == "mem01session":
            if user_id is not None:
                raise ConfigError(
                    "user_id names the user of mem0 memories; a document names its own"
                )
            store = Path(self._runtime.settings.home) / "transcripts.sqlite"
            return await import_file(
                engine.parts, file, users=users, progress=progress,
                transcripts=lambda records: write_conversations(store, records),
                screen=directive,
            )  # fmt: skip
        if source != "mem0":
            raise ConfigError(f"source must be 'mem01session' or 'mem0', got {source!r:.40}")
        with tempfile.TemporaryDirectory(prefix="mem01-import-") as folder:
            document = Path(folder) / "document.jsonl"
            left_out = convert_mem0(
                file, document, user_id=user_id, now=engine.clock(), screen=directive
            )
            report = await import_file(engine.parts, document, users=users, progress=progress)
            return replace(report, left_out=tuple(left_out))


async def _each(user_ids: Sequence[str]) -> AsyncIterator[str]:
    for user_id in user_ids:
        yield user_id


__all__ = ["PortableVerbs", "Source"]
