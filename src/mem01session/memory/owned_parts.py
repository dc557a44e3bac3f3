"""The parts of a :class:`~mem01session.memory.Memory`: checked when given (a wrong kind
fails at once, not in a run), let go of when it closes."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable

from ..checks import check_instance, check_methods
from ..config import Settings
from ..engine import BeliefEngine
from ..errors import ConfigError
from ..loops import LoopThread
from ..queue import WorkerPolicy


def check_parts(
    settings: object,
    engine: object,
    embedder: object,
    extractor: object,
    worker_policy: object,
    clock: object,
) -> None:
    """Each part given to a ``Memory`` is of its kind (else ``ConfigError``, at once)."""
    if isinstance(settings, str):
        raise ConfigError(
            "settings must be a Settings, got a str; a database URL goes in "
            "Settings(database_url=...) or MEM01_DATABASE_URL"
        )
    check_instance("settings", settings, Settings)
    check_instance("engine", engine, BeliefEngine)
    check_instance("worker_policy", worker_policy, WorkerPolicy)
    if embedder is not None:
        check_methods("embedder", embedder, "an Embedder", ("embed",))
    if extractor is not None:
        check_methods("extractor", extractor, "an Extractor", ("extract",))
    if clock is None:
        return
    if not callable(clock):
        raise ConfigError(f"clock must be callable (returning a datetime), got {clock!r}")
    if isinstance(engine, BeliefEngine) and clock is not engine.parts.clock:
        # Turns are stamped by the memory's clock, recalls reckoned by the engine's: one.
        raise ConfigError(
            "clock: the engine given has a clock of its own (BeliefEngine(..., clock=...)), "
            "which a Memory on it uses; give the clock to the engine only"
        )


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


__all__ = ["check_parts", "release_parts"]
