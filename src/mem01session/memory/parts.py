"""Letting go of the parts a :class:`~mem01session.memory.Memory` used, when it closes."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable

from ..loops import LoopThread


async def release_parts(
    home: LoopThread | None, made: Iterable[object], used: Iterable[object | None]
) -> None:
    """Close the parts ``made`` by the memory (the extractor and embedder it chose: their
    HTTP clients), on its loop ``home`` while that runs. Then, since that loop ends, every
    part ``used`` (the memory's to close or not) forgets what it holds for it: connections,
    HTTP clients. A part that fails to is let go of all the same."""
    on_home = home is not None and home.alive
    for part in made:
        close = getattr(part, "aclose", None)
        if close is not None:
            with contextlib.suppress(Exception):
                await (home.call(close()) if home is not None and on_home else close())
    if home is None or not on_home:
        return
    for part in {id(p): p for p in used if p is not None}.values():
        forget = getattr(part, "forget_loop", None)
        if forget is not None:
            with contextlib.suppress(Exception):
                await home.call(forget())


__all__ = ["release_parts"]
