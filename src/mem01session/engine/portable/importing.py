"""Importing a document file: checked whole first, then written user by user.

The first pass reads the file once, line by line, and checks every line (a bad one is
refused with its number before anything is written); it keeps where each user's lines
are. The second pass reads each user's lines again from there and writes them in one
transaction (:mod:`.restore`). The file is never held in memory.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

from ...errors import DocumentError
from ..engine_parts import EngineParts
from .document import Record, UserPart, check_lines, parse
from .report import ImportReport
from .restore import restore_user


def _lines(path: Path, start: int = 0, end: int | None = None) -> Iterator[tuple[int, int, bytes]]:
    """``(number, offset, raw)`` of the file's lines from byte ``start`` to ``end``."""
    with path.open("rb") as file:
        file.seek(start)
        offset, number = start, 0
        while end is None or offset < end:
            raw = file.readline()
            if not raw:
                return
            number += 1
            yield number, offset, raw
            offset += len(raw)


def check_file(
    path: Path, screen: Callable[[str], str | None] | None = None
) -> tuple[Record, list[UserPart]]:
    """The document's header and its users, every line checked (:class:`DocumentError`
    names the first bad one; ``screen``: see :func:`~.document.check_lines`)."""
    if not path.is_file():
        what = "a folder, not a file" if path.is_dir() else "no such file"
        raise DocumentError(0, f"{path}: {what}")
    return check_lines(_lines(path), screen)


def _user_records(path: Path, part: UserPart) -> tuple[Record, Callable[[], Iterator[Record]]]:
    """The user line of ``part``, and a reader of its other records."""
    lines = _lines(path, part.start, part.end)
    number, _, raw = next(lines)
    user = parse(raw, part.line + number - 1)

    def rest() -> Iterator[Record]:
        for n, _, line in _lines(path, part.start, part.end):
            if n > 1 and line.strip():
                yield parse(line, part.line + n - 1)

    return user, rest


async def import_file(
    parts: EngineParts,
    path: Path,
    *,
    users: Callable[[list[UserPart]], None] | None = None,
    progress: Callable[[int], None] | None = None,
    transcripts: Callable[[Iterator[Record]], int] | None = None,
    screen: Callable[[str], str | None] | None = None,
) -> ImportReport:
    """Import the document at ``path``: check it all, then write each user in a
    transaction of its own. ``users`` is shown the users once the file is checked;
    ``progress`` is told how many records were written after each batch; ``transcripts``
    writes a user's transcript records (after the user's memory, and again for a user
    imported before: it writes only conversations the store does not hold yet) and says
    how many items it wrote (None: they are left out). ``screen``: what a belief's text
    addresses to the assistant; such a belief refuses the document."""
    header, found = check_file(path, screen)
    if users is not None:
        users(found)
    same_model = header["embedding_model"] == parts.embedder.name
    done = []
    for part in found:
        user, rest = _user_records(path, part)
        restored = await restore_user(
            parts,
            part,
            user,
            rest,
            same_model=same_model,
            source=header["source"],
            progress=progress,
        )
        if transcripts is not None and part.transcripts:
            said = (r for r in rest() if r["kind"] == "transcript")
            restored = replace(restored, transcripts=transcripts(said))
        done.append(restored)
    return ImportReport(header["source"], tuple(done))
