"""The layout keeps its shape: no import circles, packages in one direction, a small API.

Every import counts: module level, inside functions, and under ``TYPE_CHECKING`` (a
type-only import shows the same design circle as a runtime one). Importing
``mem01session.a.b`` also imports the package ``mem01session.a``, so that edge counts too
(except towards the importer's own packages, which are already being imported).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import mem01session

SRC = Path(mem01session.__file__).parent
ROOT = "mem01session"

# The packages (and foundation modules) in dependency order: each may import only from
# those before it. docs/architecture.md draws the same picture.
LAYERS: list[set[str]] = [
    {"_forks"},
    {"_lazy", "secrets"},
    {"errors", "logs"},
    {"checks", "config", "tokens", "loops", "opening", "bounded", "private", "days"},
    {"db", "embeddings"},
    {"engine"},
    {"spans"},
    {"extraction"},
    {"queue"},
    {"memory"},
    {"session"},
    {"serving"},
    {"shortterm", "demo", "ui", "tools"},
    {"cli"},
    {"__main__"},
]


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in SRC.rglob("*.py")}


def _imports(name: str, path: Path, known: set[str]) -> Iterator[str]:
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(path.read_text())):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            targets = [module] + [f"{module}.{a.name}" for a in node.names]
        for target in targets:
            if not target.startswith(ROOT):
                continue
            parts = target.split(".")
            # the module itself and every package on the way to it
            for end in range(1, len(parts) + 1):
                candidate = ".".join(parts[:end])
                if (
                    candidate in known
                    and candidate != name
                    and not name.startswith(candidate + ".")
                ):
                    yield candidate


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    known = set(modules)
    return {name: set(_imports(name, path, known)) for name, path in modules.items()}


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt) :], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def _top(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "<root>"


def test_no_module_imports_itself_back() -> None:
    cycle = _cycle(_graph())
    assert cycle is None, " -> ".join(cycle or [])


def test_packages_import_only_earlier_layers() -> None:
    layer_of = {name: index for index, layer in enumerate(LAYERS) for name in layer}
    graph = _graph()
    tops = {_top(m) for m in graph} - {"<root>"}
    assert tops == set(layer_of), "every package and root module has a layer"
    wrong = sorted(
        f"{src} -> {dst}"
        for src, targets in graph.items()
        for dst in targets
        if _top(src) != "<root>"
        and _top(dst) != "<root>"
        and _top(src) != _top(dst)
        and layer_of[_top(dst)] >= layer_of[_top(src)]
    )
    assert not wrong, wrong


def test_public_api_is_small() -> None:
    assert len(mem01session.__all__) <= 15
    for name in mem01session.__all__:
        assert getattr(mem01session, name) is not None
    assert "BeliefEngine" not in mem01session.__all__  # reachable: await memory.engine()


SURFACES = ("cli", "ui", "tools")
INTERNALS = ("engine", "queue", "db")


def test_the_surfaces_use_the_memory_and_its_records_only() -> None:
    """The command line, the browser, the tools and the MCP server go through ``Memory``
    (and :mod:`mem01session.memory`'s records, reader, schema and server doors): a change
    inside the engine, the queue or the database layer touches none of them."""
    wrong = sorted(
        f"{src} -> {dst}"
        for src, targets in _graph().items()
        if _top(src) in SURFACES
        for dst in targets
        if _top(dst) in INTERNALS
    )
    assert not wrong, wrong


def _public(cls: type) -> set[str]:
    return {name for name in vars(cls) if not name.startswith("_")}


def test_the_session_is_the_sdk_protocol_and_a_few_memory_names() -> None:
    from mem01session import Mem01Session

    assert _public(Mem01Session) == {
        # the Agents SDK's Session
        "get_items",
        "add_items",
        "pop_item",
        "clear_session",
        "session_settings",
        # memory around a run
        "run_config",
        "recall",
        "flush_memory",
        "aclose",
        "max_memory_tokens",  # set in __init__ before; a property now, checked when set
        "timezone",
        "last_recall",
        "last_memory_error",
    }


def test_the_memory_offers_verbs_not_the_sessions_plumbing() -> None:
    from mem01session import Memory

    names = {n for n in dir(Memory) if not n.startswith("_")}
    plumbing = {"attach", "hold", "detach", "left_behind", "close_in_background"}
    plumbing |= {"turns_queued", "now"}
    assert not names & plumbing, names & plumbing
    verbs = {"users", "beliefs", "belief", "history", "episodes", "episode", "jobs"}
    verbs |= {"recall", "remember", "correct", "forget", "erase", "reinstate", "retry_job"}
    verbs |= {"schema_status"}
    assert verbs <= names, verbs - names
